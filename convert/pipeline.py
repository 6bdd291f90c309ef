#!/usr/bin/env python3
"""The whole conversion grid in one resumable command, for a GPU machine in calls of under 9 minutes:

    convert/pipeline.py --model .cache/models/SmolLM2-135M-Instruct.Q4_1.gguf \\
        --data build-data/corpus/train.u16.xz --runs build-data/runs --max-seconds 480 --bundle "$OUT"

Jobs, in this order (a budget B is split as LoLCATs does it, half attention transfer, half LoRA; the control and
the ablation get the same LoRA tokens and steps as stage 2):

    s1-16M  stage1 8M      s2-16M  stage2 both phases 8M      ctl-16M  control 8M      s2lin-16M  stage2 linear 8M
    s1-4M   stage1 2M      s2-4M   stage2 both phases 2M      ctl-4M   control 2M
    s1-1M   stage1 512K    s2-1M   stage2 both phases 512K    ctl-1M   control 512K

Every job: sequences of 1024 tokens, 32 a step (8 for the 1M budget, so that each stage has 64 steps). `--budgets
16M,4M,1M`, `--controls 16M` (the budgets that get a control) and `--no-ablation` change the grid. Each call runs what is left within --max-seconds (a job
cut short saves and resumes in the next call) and exits 0 when the grid is done, 3 when more calls are needed.
The length study (the 1024-token conversion breaks past 1024 tokens; convert/length_probe.py shows why: its maps,
applied after RoPE, meet rotations of positions they were never trained on) adds variants of the first budget, each
both stages: `--long 4096` (s1-16M-L4096, s2-16M-L4096: sequences of 4096 tokens, the same tokens a step, the tail
range scaled with the length), `--rope-offset-max 7168` (s1-16M-O7168, ...: 1024-token sequences whose RoPE positions
start at a random offset up to 7168, so the maps see every rotation of an 8K context at the cost of the 1024-token
jobs) and `--fm-before` (s1-16M-before, ...: the maps before RoPE, blind to position).
`--variant SPEC` (repeatable) combines them: parts `before`, `L<tokens>`, `O<offset>` joined by '-', e.g.
`--variant L4096-before` (s1-16M-L4096-before: 4096-token sequences, the maps before RoPE); the three flags above are
the variants O<n>, before and L<n>. `--fm-before` also adds its ablation, s2lin-B-before, unless `--no-ablation`. `--only NAMES` runs the named jobs of
the plan alone (a fresh machine that needs one variant, not the budgets before it).
`--bundle DIR` writes DIR/summary.json (per job: tokens, steps, seconds, GPU-minutes, validation) and
DIR/runs.tar.part00, part01, ... (pieces of 15 MiB: every job's log.json, the finished jobs' adapter directories, an
unfinished job's checkpoint); on a fresh machine `--restore DIR` (those pieces carried back) puts them into --runs. Extra options after `--` go to every train.py job (e.g. `-- --compile`).
"""
import argparse
import io
import json
import os
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import train  # noqa: E402


def plan(a):
    jobs = []
    for b in a.budgets.split(","):
        half = train.count(b) // 2
        # 32 sequences a step, fewer (down to 8) where that would leave under 64 steps a stage (the 1M budget)
        batch = max(8, min(32, half // (a.seq * 64) // 8 * 8))
        # the largest micro-batch up to --ft-micro-batch that divides the batch (24 takes 8, not 16)
        micro = max(m for m in range(1, min(batch, a.ft_micro_batch) + 1) if batch % m == 0)
        size = ["--tokens", str(half), "--batch", str(batch), "--seq", str(a.seq)]
        ft = size + ["--micro-batch", str(micro)]
        jobs.append((f"s1-{b}", b, ["stage1", *size]))
        jobs.append((f"s2-{b}", b, ["stage2", *ft, "--maps", os.path.join(a.runs, f"s1-{b}"),
                                    "--tail-min", str(a.tail_min), "--tail-max", str(a.tail_max)]))
        if a.controls == "all" or b in a.controls.split(","):
            jobs.append((f"ctl-{b}", b, ["control", *ft]))
        if not a.no_ablation and b == a.budgets.split(",")[0]:
            jobs.append((f"s2lin-{b}", b, ["stage2", "--phases", "linear", *ft, "--maps",
                                           os.path.join(a.runs, f"s1-{b}")]))
        if b == a.budgets.split(",")[0]:
            for spec in variant_specs(a):
                seq, s1_extra, s2_extra = variant_options(a, spec)
                jobs += variant_jobs(a, b, batch, micro, spec, seq, s1_extra, s2_extra,
                                     ablation=spec == "before" and not a.no_ablation)
    return jobs


def variant_specs(a):
    """The length study's variants in the order they run: --rope-offset-max, --fm-before, --long (cheapest first),
    then each --variant as given; a variant named twice runs once."""
    specs = ([f"O{a.rope_offset_max}"] if a.rope_offset_max else []) + (["before"] if a.fm_before else []) + \
        ([f"L{a.long}"] if a.long else []) + list(a.variant or [])
    return list(dict.fromkeys(specs))


def variant_options(a, spec):
    """A variant SPEC, parts joined by '-': before (the maps before RoPE), L<n> (sequences of n tokens), O<n> (RoPE
    offsets up to n); e.g. L4096-before. Returns its sequence length and the extra options of stage 1 and stage 2."""
    seq, s1, s2, seen = a.seq, [], [], set()
    for part in spec.split("-"):
        kind = "before" if part == "before" else part[:1]
        if kind in seen or not (part == "before" or (part[:1] in "LO" and part[1:].isdigit() and int(part[1:]) > 0)):
            raise SystemExit(f"--variant {spec}: parts are before, L<tokens> and O<offset>, each once, joined by '-'")
        seen.add(kind)
        if part == "before":
            s1 += ["--feature-map-rope", "before"]
        elif kind == "L":
            seq = int(part[1:])
        else:
            s1 += ["--rope-offset-max", part[1:]]
            s2 += ["--rope-offset-max", part[1:]]
    return seq, s1, s2


def variant_jobs(a, b, batch, micro, suffix, seq, s1_extra, s2_extra, ablation=False):
    """The first budget converted again, both stages, as s1-{b}-{suffix} and s2-{b}-{suffix}: on sequences of `seq`
    tokens (the same tokens a step, stage 2's micro-batch of as many tokens, the tail range scaled by seq / --seq),
    with extra options for each stage. The variants of the length study: --long, --rope-offset-max, --fm-before.
    With `ablation`, also s2lin-{b}-{suffix}: stage 2 on the same maps in the linear phase only."""
    half = train.count(b) // 2
    scale = seq / a.seq
    batch_v = max(1, int(batch / scale))
    micro_v = max(m for m in range(1, max(1, min(batch_v, int(micro / scale))) + 1) if batch_v % m == 0)
    size = ["--tokens", str(half), "--batch", str(batch_v), "--seq", str(seq)]
    s1, s2 = f"s1-{b}-{suffix}", f"s2-{b}-{suffix}"
    jobs = [(s1, b, ["stage1", *size, *s1_extra]),
            (s2, b, ["stage2", *size, "--micro-batch", str(micro_v), "--maps", os.path.join(a.runs, s1),
                     "--tail-min", str(int(a.tail_min * scale)), "--tail-max", str(int(a.tail_max * scale)),
                     *s2_extra])]
    if ablation:
        jobs.append((f"s2lin-{b}-{suffix}", b, ["stage2", "--phases", "linear", *size, "--micro-batch", str(micro_v),
                                                 "--maps", os.path.join(a.runs, s1), *s2_extra]))
    return jobs


def unpacked(path):
    """A .xz token file decompressed once beside itself (checked against manifest.json's sha256 when present)."""
    if not path.endswith(".xz"):
        return path
    import hashlib
    import lzma
    out = path[:-3]
    man = os.path.join(os.path.dirname(path), "manifest.json")
    want = json.load(open(man)).get("outputs", {}).get(os.path.basename(out), {}).get("sha256") \
        if os.path.exists(man) else None
    if not os.path.exists(out) or (want and hashlib.sha256(open(out, "rb").read()).hexdigest() != want):
        raw = lzma.open(path).read()
        if want and hashlib.sha256(raw).hexdigest() != want:
            raise SystemExit(f"{path}: the tokens' sha256 differs from {man}'s")
        with open(out + ".tmp", "wb") as f:
            f.write(raw)
        os.replace(out + ".tmp", out)
    return out


def job_log(a, name):
    p = os.path.join(a.runs, name, "log.json")
    return json.load(open(p)) if os.path.exists(p) else None


def summary(a, jobs):
    out = {"schema": 1, "jobs": {}}
    for name, b, argv in jobs:
        lg = job_log(a, name)
        if lg is None:
            out["jobs"][name] = {"state": "not started"}
            continue
        out["jobs"][name] = {"state": "done" if lg["done"] else "partial", "job": lg["job"], "budget": b,
                             "tokens_planned": lg["tokens_planned"], "tokens_seen": lg["tokens_seen"],
                             "steps": lg["steps_done"], "seconds": lg["seconds"],
                             "gpu_minutes": round(lg["seconds"] / 60.0, 3), "gpu": lg["environment"].get("gpu"),
                             "torch": lg["environment"]["torch"], "validation": lg.get("validation"),
                             "last": lg["steps"][-1] if lg["steps"] else None,
                             "tokens_seen_by_source": lg["tokens_seen_by_source"]}
    return out


PART = 15 * 2 ** 20  # what comes back from a GPU machine: files of at most 16 MiB


def bundle(a, jobs):
    """DIR/summary.json, and the state of --runs as DIR/runs.tar.partNN (15 MiB pieces): every job's log.json, a
    finished job's adapter/, an unfinished job's ckpt.pt. `--restore DIR` puts it back on a fresh machine."""
    os.makedirs(a.bundle, exist_ok=True)
    s = summary(a, jobs)
    with open(os.path.join(a.bundle, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for n, _, _ in jobs:
            d = os.path.join(a.runs, n)
            state = s["jobs"][n]["state"]
            if state == "not started":
                continue
            t.add(os.path.join(d, "log.json"), arcname=f"{n}/log.json")
            files = ["adapter/config.json", "adapter/adapter.safetensors"] if state == "done" else ["ckpt.pt"]
            for f in files:
                if os.path.exists(os.path.join(d, f)):
                    t.add(os.path.join(d, f), arcname=f"{n}/{f}")
    for old in os.listdir(a.bundle):
        if old.startswith("runs.tar.part"):
            os.unlink(os.path.join(a.bundle, old))
    data = buf.getvalue()
    for k in range(0, max(1, -(-len(data) // PART))):
        with open(os.path.join(a.bundle, f"runs.tar.part{k:02d}"), "wb") as f:
            f.write(data[k * PART:(k + 1) * PART])
    print(f"pipeline: {a.bundle}: summary.json and runs.tar.part* ({len(data) / 2 ** 20:.1f} MiB)", file=sys.stderr)


def restore(a):
    """Unpacks DIR/runs.tar.part* into --runs, for the jobs --runs does not already hold."""
    parts = sorted(f for f in os.listdir(a.restore) if f.startswith("runs.tar.part"))
    if not parts:
        raise SystemExit(f"--restore {a.restore}: no runs.tar.part* there")
    data = b"".join(open(os.path.join(a.restore, f), "rb").read() for f in parts)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r") as t:
        for m in t.getmembers():
            name = os.path.normpath(m.name)
            if not m.isfile() or name.startswith("..") or os.path.isabs(name):
                raise SystemExit(f"--restore: unexpected member {m.name}")
            job = name.split(os.sep)[0]
            if os.path.exists(os.path.join(a.runs, job, "log.json")) and \
                    not os.path.exists(os.path.join(a.runs, job, ".restored")):
                continue  # this machine's own copy is as new or newer
            dest = os.path.join(a.runs, name)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            with open(dest, "wb") as f:
                f.write(t.extractfile(m).read())
            open(os.path.join(a.runs, job, ".restored"), "w").close()
    for d in os.listdir(a.runs):
        marker = os.path.join(a.runs, d, ".restored")
        if os.path.exists(marker):
            os.unlink(marker)
    print(f"pipeline: restored {a.runs} from {a.restore} ({len(parts)} parts)", file=sys.stderr)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True, action="append")
    ap.add_argument("--runs", default="build-data/runs", help="job directories (kept between calls)")
    ap.add_argument("--budgets", default="16M,4M,1M", help="conversion token budgets, first one gets the ablation")
    ap.add_argument("--no-ablation", action="store_true", help="no linear-phase-only stage 2")
    ap.add_argument("--controls", default="all", help="budgets that get a control transformer (comma-separated, or all)")
    ap.add_argument("--ft-micro-batch", type=int, default=16, help="micro-batch of the LoRA jobs (default 16)")
    ap.add_argument("--seq", type=int, default=1024, help="sequence length of every job (default 1024)")
    ap.add_argument("--long", type=int, default=0,
                    help="also convert the first budget with sequences of this many tokens (s1-B-L<n>, s2-B-L<n>)")
    ap.add_argument("--rope-offset-max", type=int, default=0,
                    help="also convert the first budget with RoPE offsets up to this (s1-B-O<n>, s2-B-O<n>)")
    ap.add_argument("--fm-before", action="store_true",
                    help="also convert the first budget with the feature maps before RoPE (s1-B-before, s2-B-before)")
    ap.add_argument("--variant", action="append",
                    help="also convert the first budget as variant SPEC (repeat): parts before, L<tokens>, O<offset> "
                    "joined by '-', e.g. L4096-before (s1-B-SPEC, s2-B-SPEC)")
    ap.add_argument("--only", help="run only these jobs of the plan (comma-separated names, e.g. s1-16M-before,"
                    "s2-16M-before); the others are left out of the run, the summary and the bundle")
    ap.add_argument("--tail-min", type=int, default=64, help="stage 2 tail range (default 64..256)")
    ap.add_argument("--tail-max", type=int, default=256)
    ap.add_argument("--max-seconds", type=float, default=480)
    ap.add_argument("--bundle", help="write summary.json and runs.tar.part* (the state of --runs) here")
    ap.add_argument("--restore", help="a folder of runs.tar.part* from an earlier call (a fresh machine)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    t0 = time.time()
    a.data = [unpacked(d) for d in a.data]
    os.makedirs(a.runs, exist_ok=True)
    if a.restore:
        restore(a)
    jobs = plan(a)
    if a.only:
        names = [n for n in a.only.split(",") if n]
        unknown = [n for n in names if n not in {j[0] for j in jobs}]
        if unknown:
            raise SystemExit(f"--only: no job {', '.join(unknown)} in this plan (it has {', '.join(j[0] for j in jobs)})")
        jobs = [j for j in jobs if j[0] in names]
    rc = 0
    for name, b, job_argv in jobs:
        lg = job_log(a, name)
        if lg and lg["done"]:
            continue
        left = a.max_seconds - (time.time() - t0)
        if left < 60:
            rc = train.STOPPED
            break
        args = job_argv + ["--model", a.model, "--out", os.path.join(a.runs, name), "--seed", str(a.seed),
                           "--resume", "--max-seconds", str(int(left))]
        for d in a.data:
            args += ["--data", d]
        print(f"pipeline: {name}: {' '.join(job_argv)} ({left:.0f} s left)", file=sys.stderr, flush=True)
        rc = train.main(args + extra)
        if rc != 0:
            break
    if a.bundle:
        bundle(a, jobs)
    done = all((job_log(a, n) or {}).get("done") for n, _, _ in jobs)
    print(f"pipeline: {'ALL DONE' if done else 'NOT DONE: run again'} ({time.time() - t0:.0f} s this call)",
          file=sys.stderr)
    return 0 if done else train.STOPPED


if __name__ == "__main__":
    sys.exit(main())
