#!/usr/bin/env python3
"""Rebuilds the conversion's training corpus from Debian packages, deterministically.

    .venv/bin/python convert/make_data.py                 # -> build-data/corpus/ (git-ignored)
    .venv/bin/python convert/make_data.py --check         # rebuild, and fail unless the sha256 of every output
                                                          # equals convert/data-manifest.json's
    .venv/bin/python convert/make_data.py --write-manifest  # after a deliberate change: rewrite the committed
                                                          # manifest and the tables of convert/SOURCES.md

Each package is fetched with `apt-get download NAME=VERSION` (the versions are pinned below), its sha256 checked
against the manifest, unpacked with `dpkg -x`, and the files named by its rule turned into plain-text documents (one
a book, a source file or a manual page). Every document is tokenized with SmolLM2's tokenizer
(data/tokenizers/smollm2/tokenizer.json through the `tokenizers` library; a deterministic sample of documents is
checked equal to the engine's own tokenizer, `orthros tokenize`, when --orthros names a binary) and documents are
joined with the end-of-sequence token (id 2, `<|im_end|>`, the GGUF's eos) after each one.

Never in the corpus (the evaluation texts): Genesis and Exodus of the King James Version (data/text/kjv-genesis-exodus
.txt) and of the World English Bible (the same books in another translation), the Python Tutorial (the second
perplexity text, data/text/python-tutorial.txt, written by data/text/make_python_tutorial.sh), the recall file and
the RULER haystacks (generated sentences; the script refuses a document that contains one of their sentences).

Outputs in --out (default build-data/corpus):
    train.u16      uint16 little-endian token ids, documents separated by eos
    val.u16        the same for the validation documents (1 in 100, chosen by a hash of the document's name)
    train.u16.xz   the training tokens compressed (xz -9e, single thread: the bytes are reproducible) for the trip
                   to the GPU machine
    manifest.json  every package (name, version, sha256, licence), every document (file, bytes, tokens, split),
                   per source totals, and the sha256 of each output
"""
import argparse
import gzip
import hashlib
import html.parser
import json
import lzma
import os
import re
import struct
import subprocess
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "convert", "data-manifest.json")
SOURCES_MD = os.path.join(ROOT, "convert", "SOURCES.md")
TOKENIZER = os.path.join(ROOT, "data", "tokenizers", "smollm2", "tokenizer.json")
EOS = 2
# RULER's noise sentences and the recall file's opening words: a document holding one is refused.
EVAL_SENTENCES = ["The grass is green. The sky is blue.", "The village of Marrowby"]

# name, pinned version, licence (from the package's copyright file), what is used
PACKAGES = [
    ("bible-kjv", "4.38", "GPL-2+ (the program)", "the `bible` program, run to dump the text"),
    ("bible-kjv-text", "4.38", "public domain (King James Version, 1611)",
     "Leviticus to Revelation (Genesis and Exodus excluded: the eval text)"),
    ("sword-text-web", "426.0-1", "public domain (World English Bible)",
     "every book but Genesis and Exodus, the preface included; OSIS markup and footnotes removed"),
    ("python3.11-doc", "3.11.2-6+deb12u9", "PSF-2.0 (Python documentation)",
     "html/_sources/**/*.rst.txt except tutorial/ (held out) and whatsnew/changelog"),
    ("linux-doc-6.1", "6.1.192-3", "GPL-2", "Documentation/**/*.rst.gz except translations/"),
    ("perl-doc", "5.36.0-7+deb12u4", "GPL-1+ or Artistic", "usr/share/perl/*/pod/*.pod"),
    ("postgresql-doc-15", "15.20-0+deb12u1", "PostgreSQL", "html/*.html as text (navigation removed)"),
    ("git-doc", "1:2.39.5-0+deb12u3", "GPL-2", "usr/share/doc/git-doc/*.txt (AsciiDoc sources)"),
    ("debian-reference-en", "2.100", "GPL-2+", "usr/share/debian-reference/*.en.html as text"),
    ("debian-handbook", "11.20220922", "GPL-2+ or CC-BY-SA-3.0", "html/en-US/*.html as text"),
    ("manpages", "6.03-2", "GPL-2+ and others (see its copyright file)", "man pages, roff requests removed"),
    ("manpages-dev", "6.03-2", "GPL-2+ and others (see its copyright file)", "man pages, roff requests removed"),
]


def die(msg):
    sys.exit("make_data: " + msg)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def deb_name(name, version):
    return f"{name}_{version.replace(':', '%3a')}_"


def fetch(work, name, version):
    """The .deb of name=version in work/debs (downloaded when missing), unpacked into work/x/name."""
    debs = os.path.join(work, "debs")
    os.makedirs(debs, exist_ok=True)
    have = [f for f in os.listdir(debs) if f.startswith(deb_name(name, version)) and f.endswith(".deb")]
    if not have:
        r = subprocess.run(["apt-get", "download", f"{name}={version}"], cwd=debs, capture_output=True, text=True)
        if r.returncode != 0:
            die(f"apt-get download {name}={version} failed ({r.stderr.strip().splitlines()[-1:]}); "
                "run `apt-get update` first; if Debian no longer has this version, pin the new one here and "
                "rebuild with --write-manifest")
        have = [f for f in os.listdir(debs) if f.startswith(deb_name(name, version)) and f.endswith(".deb")]
    deb = os.path.join(debs, sorted(have)[0])
    dest = os.path.join(work, "x", name)
    if not os.path.isdir(dest):
        os.makedirs(dest + ".tmp", exist_ok=True)
        subprocess.run(["dpkg", "-x", deb, dest + ".tmp"], check=True)
        os.rename(dest + ".tmp", dest)
    return deb, dest


def files_under(top, pattern):
    rx = re.compile(pattern)
    out = []
    for d, dirs, files in os.walk(top):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(d, f)
            rel = os.path.relpath(p, top)
            if rx.search(rel):
                out.append((rel, p))
    return out


def read_text(path):
    raw = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    return raw.decode("utf-8", errors="replace")


def tidy(text):
    """Unix line ends, no trailing blanks, at most two newlines in a row, no leading/trailing blank lines."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.strip("\n") + "\n"


class HtmlText(html.parser.HTMLParser):
    """The visible text of an HTML page: no script/style/head, navigation divs skipped, a newline at block ends."""
    BLOCK = {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "tr", "br", "pre", "dt", "dd", "table", "title",
             "blockquote", "section", "ul", "ol", "dl", "hr"}
    SKIP_CLASS = re.compile(r"\b(navheader|navfooter|toc|navigation|footer)\b")

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skip, self.pre = [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.skip:
            if tag == self.skip[-1][0]:
                self.skip[-1][1] += 1
            return
        if tag in ("script", "style", "head") or (tag in ("div", "table", "ul") and
                                                   self.SKIP_CLASS.search(a.get("class") or "")):
            self.skip.append([tag, 1])
            return
        if tag == "pre":
            self.pre += 1
        if tag in self.BLOCK:
            self.out.append("\n")

    def handle_endtag(self, tag):
        if self.skip:
            if tag == self.skip[-1][0]:
                self.skip[-1][1] -= 1
                if self.skip[-1][1] == 0:
                    self.skip.pop()
            return
        if tag == "pre":
            self.pre = max(0, self.pre - 1)
        if tag in self.BLOCK:
            self.out.append("\n")

    def handle_data(self, data):
        if self.skip:
            return
        self.out.append(data if self.pre else re.sub(r"[ \t\n]+", " ", data))

    def text(self):
        return "\n".join(line.strip() if not self.pre else line for line in "".join(self.out).split("\n"))


def html_text(s):
    p = HtmlText()
    p.feed(s)
    p.close()
    return p.text()


def _roff_inline(line):
    line = re.sub(r"\\f(\[[^\]]*\]|\(..|.)", "", line)
    line = re.sub(r"\\\((..)", lambda m: {"em": "\u2014", "en": "\u2013", "bu": "\u2022", "aq": "'", "dq": '"',
                                            "rs": "\\", "co": "\u00a9", "lq": "\u201c", "rq": "\u201d"}.get(m.group(1), ""),
                  line)
    line = re.sub(r"\\\*\[[^\]]*\]|\\\*.", "", line)
    line = re.sub(r"\\\[(\w+)\]", lambda m: {"em": "\u2014", "en": "\u2013", "bu": "\u2022", "aq": "'", "dq": '"',
                                             "rs": "\\", "co": "\u00a9", "lq": "\u201c", "rq": "\u201d",
                                             "ti": "~", "ha": "^", "dg": "\u2020"}.get(m.group(1), ""), line)
    line = line.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "").replace("\\ ", " ").replace("\\~", " ")
    return re.sub(r"\\[|^%:/,c]", "", line)


def _roff_args(rest):
    return [a.replace('""', '"') for a in re.findall(r'"((?:[^"]|"")*)"|(\S+)', rest) for a in a if a] if rest else []


def roff_text(s):
    """A man page as text: filled paragraphs joined into lines, no-fill blocks (.nf/.EX) kept as they are,
    a blank line at each paragraph request, headings on their own line, font and escape sequences removed.
    Crude (no macro expansion, tables as their raw cells), deterministic."""
    paras, cur, fill = [], [], True

    def brk():
        if cur:
            paras.append(" ".join(cur) if fill else "\n".join(cur))
            cur.clear()

    for line in s.split("\n"):
        if line.startswith(('.\\"', "'\\\"", '.\\"')) or line.strip() in (".", "'"):
            continue
        m = re.match(r"^[.'] *([A-Za-z]+)\s*(.*)$", line)
        if not m:
            t = _roff_inline(line)
            if fill and not t.strip():
                brk()
            elif t.strip() or not fill:
                cur.append(t if not fill else t.strip())
            continue
        req, rest = m.group(1), m.group(2)
        if req in ("nf", "EX"):
            brk()
            fill = False
        elif req in ("fi", "EE"):
            brk()
            fill = True
        elif req in ("SH", "SS", "Sh", "Ss", "SY"):
            brk()
            paras.append(_roff_inline(" ".join(_roff_args(rest))))
        elif req in ("PP", "P", "LP", "TP", "IP", "HP", "sp", "br", "RS", "RE", "Pp", "TH", "Dd", "Bl", "El", "It",
                     "TQ"):
            brk()
            if req == "IP" and rest:
                args = _roff_args(rest)
                if args:
                    cur.append(_roff_inline(args[0]))
            elif req == "It" and rest:
                cur.append(_roff_inline(rest))
        elif req in ("B", "I", "SM", "SB", "Nm", "Nd", "Ar", "Fl", "Pa", "Xr", "Va", "Fn", "Ql", "Dq", "Sq", "Em",
                     "Cm", "Dv", "Er", "Ev", "Ic", "Li"):
            cur.append(_roff_inline(" ".join(_roff_args(rest))))
        elif req in ("BR", "BI", "IB", "IR", "RB", "RI"):
            cur.append(_roff_inline("".join(_roff_args(rest))))
        elif req in ("UR", "MT") and rest:
            cur.append(_roff_inline(rest))
    brk()
    return "\n\n".join(p for p in paras if p.strip())


# ---- the sources: each yields (document name, text) ----

def kjv_documents(work):
    _, prog = fetch(work, "bible-kjv", "4.38")
    _, data = fetch(work, "bible-kjv-text", "4.38")
    r = subprocess.run([os.path.join(prog, "usr/bin/bible"), "-p", os.path.join(data, "usr/lib"), "-l100000",
                        "lev1:1-rev22:21"], capture_output=True, check=True)
    book, paras, para, docs = None, [], "", []

    def flush_book():
        if book is not None:
            docs.append(("kjv/" + book, tidy("\n\n".join(paras))))

    for line in r.stdout.decode("utf-8").split("\n"):
        m = re.match(r"^((?:[1-3] )?[A-Z][A-Za-z ]+) ([0-9]+)$", line)
        if m:
            if para:
                paras.append(para)
            para = ""
            if m.group(2) == "1" and m.group(1) != book:
                flush_book()
                book, paras = m.group(1), []
            paras.append(line)
            continue
        v = re.match(r"^ *[0-9]+ (.*)$", line)
        if v:
            para = v.group(1) if not para else para + " " + v.group(1)
    if para:
        paras.append(para)
    flush_book()
    names = [d[0] for d in docs]
    if "kjv/Leviticus" not in names or "kjv/Revelation" not in names or any("Genesis" in n or "Exodus" in n
                                                                              for n in names):
        die("bible dump: unexpected books " + ", ".join(names[:5]))
    return docs


def web_documents(work):
    _, x = fetch(work, "sword-text-web", "426.0-1")
    mod = os.path.join(x, "usr/share/sword/modules/texts/ztext/engWEB2015eb")
    whole = []
    for t in ("ot", "nt"):
        bzs, bzz = open(os.path.join(mod, t + ".bzs"), "rb").read(), open(os.path.join(mod, t + ".bzz"), "rb").read()
        bzv = open(os.path.join(mod, t + ".bzv"), "rb").read()
        blocks = {}
        for e in range(len(bzv) // 10):  # the verse index: block, offset in the block, size
            blk, off, size = struct.unpack_from("<IIH", bzv, 10 * e)
            if not size:
                continue
            if blk not in blocks:
                boff, bsize, _ = struct.unpack_from("<III", bzs, 12 * blk)
                blocks[blk] = zlib.decompress(bzz[boff:boff + bsize])
            whole.append(blocks[blk][off:off + size].decode("utf-8"))
    s = " ".join(whole)
    s = re.sub(r"<note\b[^>]*>.*?</note>", "\x01", s, flags=re.S)
    s = re.sub(r"<milestone\b[^>]*/>", "", s)
    s = re.sub(r"<title\b[^>]*>(.*?)</title>", r"\n\n\1\n\n", s, flags=re.S)
    s = re.sub(r"<chapter\b[^>]*sID=[^>]*/>", "\n\n", s)
    s = re.sub(r"<(p|l|lg)\b[^>]*/>", "\n", s)
    parts = re.split(r'<div\b[^>]*osisID="([A-Za-z0-9]+)"[^>]*type="book"[^>]*/>', s)
    docs = [("web/Preface", parts[0])] + [("web/" + parts[i], parts[i + 1]) for i in range(1, len(parts), 2)]
    out = []
    for name, body in docs:
        if name in ("web/Gen", "web/Exod"):
            continue
        body = re.sub(r"<[^>]+>", "", body)
        body = re.sub(r"\x01+(?=[A-Za-z\u201c\u2018(])", " ", body).replace("\x01", "")
        body = "\n".join(re.sub(r"[ \t]+", " ", l).strip() for l in body.split("\n"))
        out.append((name, tidy(body)))
    names = [d[0] for d in out]
    if "web/Lev" not in names or "web/Rev" not in names:
        die("WEB: unexpected books " + ", ".join(names[:8]))
    return out


def python_documents(work):
    _, x = fetch(work, "python3.11-doc", "3.11.2-6+deb12u9")
    top = os.path.join(x, "usr/share/doc/python3.11/html/_sources")
    return [("python/" + rel, tidy(read_text(p))) for rel, p in files_under(top, r"\.rst\.txt$")
            if not rel.startswith("tutorial/") and rel != "whatsnew/changelog.rst.txt"]


def linux_documents(work):
    _, x = fetch(work, "linux-doc-6.1", "6.1.192-3")
    top = os.path.join(x, "usr/share/doc/linux-doc-6.1/Documentation")
    return [("linux/" + rel, tidy(read_text(p))) for rel, p in files_under(top, r"\.rst\.gz$")
            if not rel.startswith("translations/")]


def perl_documents(work):
    _, x = fetch(work, "perl-doc", "5.36.0-7+deb12u4")
    return [("perl/" + rel, tidy(read_text(p))) for rel, p in files_under(os.path.join(x, "usr/share/perl"),
                                                                          r"/pod/[^/]+\.pod$")]


def html_documents(work, name, version, subdir, pattern, label):
    _, x = fetch(work, name, version)
    return [(label + "/" + rel, tidy(html_text(read_text(p)))) for rel, p in files_under(os.path.join(x, subdir),
                                                                                       pattern)]


def git_documents(work):
    _, x = fetch(work, "git-doc", "1:2.39.5-0+deb12u3")
    return [("git/" + rel, tidy(read_text(p))) for rel, p in files_under(os.path.join(x, "usr/share/doc/git-doc"),
                                                                         r"^[^/]+\.txt$")]


def man_documents(work, name):
    _, x = fetch(work, name, "6.03-2")
    return [(name + "/" + rel, tidy(roff_text(read_text(p)))) for rel, p in
            files_under(os.path.join(x, "usr/share/man"), r"^man[0-9]/[^/]+\.[0-9][a-z]*(\.gz)?$")]


SOURCES = [
    ("kjv", ["bible-kjv", "bible-kjv-text"], kjv_documents),
    ("web", ["sword-text-web"], web_documents),
    ("python", ["python3.11-doc"], python_documents),
    ("linux", ["linux-doc-6.1"], linux_documents),
    ("perl", ["perl-doc"], perl_documents),
    ("postgresql", ["postgresql-doc-15"], lambda w: html_documents(
        w, "postgresql-doc-15", "15.20-0+deb12u1", "usr/share/doc/postgresql-doc-15/html", r"^[^/]+\.html$",
        "postgresql")),
    ("git", ["git-doc"], git_documents),
    ("debian-reference", ["debian-reference-en"], lambda w: html_documents(
        w, "debian-reference-en", "2.100", "usr/share/debian-reference", r"^[^/]+\.en\.html$", "debian-reference")),
    ("debian-handbook", ["debian-handbook"], lambda w: html_documents(
        w, "debian-handbook", "11.20220922", "usr/share/doc/debian-handbook/html/en-US", r"^[^/]+\.html$",
        "debian-handbook")),
    ("manpages", ["manpages", "manpages-dev"], lambda w: man_documents(w, "manpages") +
     man_documents(w, "manpages-dev")),
]


def is_val(name):
    return hashlib.sha256(name.encode()).digest()[0] < 3  # about 1 in 85


def engine_check(orthros, gguf, docs, ids_of):
    """The engine's tokenizer against tokenizers' on every 97th document (its first 20,000 bytes)."""
    import tempfile
    bad = 0
    sample = docs[::97]
    for name, text in sample:
        t = text.encode("utf-8")[:20000].decode("utf-8", errors="ignore")
        with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
            f.write(t.encode("utf-8"))
        r = subprocess.run([orthros, "tokenize", "--model", gguf, "--text-file", f.name], capture_output=True,
                           text=True)
        os.unlink(f.name)
        if r.returncode != 0:
            die(f"orthros tokenize failed: {r.stderr.strip()}")
        eng = [int(v) for v in r.stdout.strip().split(",")] if r.stdout.strip() else []
        if eng != ids_of(t):
            bad += 1
            print(f"make_data: tokenizers and the engine differ on {name}", file=sys.stderr)
    if bad:
        die(f"{bad} of {len(sample)} sampled documents tokenize differently in the engine")
    return len(sample)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "build-data", "corpus"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build-data", "debian"), help="downloads and unpacked debs")
    ap.add_argument("--orthros", default=os.path.join(ROOT, "build", "orthros"),
                    help="engine binary for the tokenizer check (skipped with a warning when absent)")
    ap.add_argument("--gguf", default=os.path.join(ROOT, ".cache", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--check", action="store_true", help="fail unless the outputs' sha256 equal the manifest's")
    ap.add_argument("--write-manifest", action="store_true", help="rewrite convert/data-manifest.json and SOURCES.md")
    a = ap.parse_args()
    try:
        from tokenizers import Tokenizer
    except ImportError:
        die("the `tokenizers` package is missing: python3 -m pip install -r evals/requirements.txt")
    tok = Tokenizer.from_file(TOKENIZER)

    def ids_of(text):
        return tok.encode(text, add_special_tokens=False).ids

    old = json.load(open(MANIFEST)) if os.path.exists(MANIFEST) else None
    os.makedirs(a.out, exist_ok=True)
    packages = []
    for name, version, licence, used in PACKAGES:
        deb, _ = fetch(a.work, name, version)
        sha = sha256_file(deb)
        if old and not a.write_manifest:
            want = {p["name"]: p for p in old["packages"]}.get(name)
            if want and (want["version"] != version or want["sha256"] != sha):
                die(f"{os.path.basename(deb)}: sha256 {sha} differs from the manifest's {want['sha256']}")
        packages.append({"name": name, "version": version, "deb": os.path.basename(deb), "sha256": sha,
                         "bytes": os.path.getsize(deb), "licence": licence, "used": used})

    docs_meta, totals = [], {}
    all_docs = []
    with open(os.path.join(a.out, "train.u16.tmp"), "wb") as ftrain, open(os.path.join(a.out, "val.u16.tmp"),
                                                                          "wb") as fval:
        for src, pkgs, fn in SOURCES:
            docs = fn(a.work)
            t = totals.setdefault(src, {"packages": pkgs, "documents": 0, "bytes": 0, "train_tokens": 0,
                                        "val_tokens": 0})
            texts = [d[1] for d in docs]
            encs = tok.encode_batch(texts, add_special_tokens=False)
            for (name, text), enc in zip(docs, encs):
                if len(text.strip()) < 200:
                    continue
                for s in EVAL_SENTENCES:
                    if s in text:
                        die(f"{name} holds an eval text ({s!r})")
                ids = enc.ids + [EOS]
                if max(ids) >= 65536:
                    die("token id past uint16")
                val = is_val(name)
                (fval if val else ftrain).write(struct.pack(f"<{len(ids)}H", *ids))
                nbytes = len(text.encode("utf-8"))
                t["documents"] += 1
                t["bytes"] += nbytes
                t["val_tokens" if val else "train_tokens"] += len(ids)
                docs_meta.append({"name": name, "bytes": nbytes, "tokens": len(ids), "split": "val" if val else
                                  "train"})
                all_docs.append((name, text))
            print(f"make_data: {src}: {t['documents']} documents, {t['bytes']} bytes, {t['train_tokens']} train + "
                  f"{t['val_tokens']} val tokens", file=sys.stderr, flush=True)
    for f in ("train.u16", "val.u16"):
        os.replace(os.path.join(a.out, f + ".tmp"), os.path.join(a.out, f))

    checked = 0
    if os.path.exists(a.orthros) and os.path.exists(a.gguf):
        checked = engine_check(a.orthros, a.gguf, all_docs, ids_of)
        print(f"make_data: the engine's tokenizer agrees on {checked} sampled documents", file=sys.stderr)
    else:
        print(f"make_data: warning: no engine check ({a.orthros} or {a.gguf} missing)", file=sys.stderr)

    train = os.path.join(a.out, "train.u16")
    with open(train, "rb") as f, open(train + ".xz.tmp", "wb") as g:
        g.write(lzma.compress(f.read(), preset=9 | lzma.PRESET_EXTREME))
    os.replace(train + ".xz.tmp", train + ".xz")
    outputs = {f: {"sha256": sha256_file(os.path.join(a.out, f)), "bytes": os.path.getsize(os.path.join(a.out, f))}
               for f in ("train.u16", "val.u16", "train.u16.xz")}
    man = {"schema": 1, "tokenizer": "data/tokenizers/smollm2/tokenizer.json (SmolLM2, vocab 49152)",
           "eos": EOS, "dtype": "uint16 little-endian", "engine_checked_documents": checked,
           "packages": packages, "sources": totals, "outputs": outputs,
           "train_tokens": sum(t["train_tokens"] for t in totals.values()),
           "val_tokens": sum(t["val_tokens"] for t in totals.values()), "documents": docs_meta}
    json.dump(man, open(os.path.join(a.out, "manifest.json"), "w"), indent=1)
    print(f"make_data: {man['train_tokens']} training tokens, {man['val_tokens']} validation tokens; "
          f"train.u16.xz {outputs['train.u16.xz']['bytes']} bytes", file=sys.stderr)
    if a.check:
        if not old:
            die("--check: no convert/data-manifest.json")
        for f, o in outputs.items():
            if o["sha256"] != old["outputs"][f]["sha256"]:
                die(f"--check: {f} sha256 {o['sha256']} differs from the manifest's {old['outputs'][f]['sha256']}")
        print("make_data: --check: every output matches the manifest", file=sys.stderr)
    if a.write_manifest:
        json.dump(man, open(MANIFEST, "w"), indent=1)
        write_sources_md(man)
        print(f"make_data: wrote {MANIFEST} and {SOURCES_MD}", file=sys.stderr)
    return 0


def write_sources_md(man):
    """Rewrites the generated tables between the markers of convert/SOURCES.md."""
    rows = ["| package | version | licence | .deb sha256 | used |", "| --- | --- | --- | --- | --- |"]
    for p in man["packages"]:
        rows.append(f"| {p['name']} | {p['version']} | {p['licence']} | `{p['sha256'][:16]}...` | {p['used']} |")
    rows += ["", "| source | documents | bytes | training tokens | validation tokens |", "| --- | --- | --- | --- | --- |"]
    for s, t in man["sources"].items():
        rows.append(f"| {s} | {t['documents']} | {t['bytes']:,} | {t['train_tokens']:,} | {t['val_tokens']:,} |")
    rows.append(f"| **all** | {sum(t['documents'] for t in man['sources'].values())} | "
                f"{sum(t['bytes'] for t in man['sources'].values()):,} | {man['train_tokens']:,} | "
                f"{man['val_tokens']:,} |")
    rows += ["", "| output | bytes | sha256 |", "| --- | --- | --- |"]
    for f, o in man["outputs"].items():
        rows.append(f"| build-data/corpus/{f} | {o['bytes']:,} | `{o['sha256']}` |")
    body = "\n".join(rows)
    text = open(SOURCES_MD).read()
    a, b = "<!-- generated by convert/make_data.py: begin -->", "<!-- generated: end -->"
    i, j = text.index(a), text.index(b)
    open(SOURCES_MD, "w").write(text[:i + len(a)] + "\n" + body + "\n" + text[j:])


if __name__ == "__main__":
    sys.exit(main())
