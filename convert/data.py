"""Training tokens: one or more uint16 little-endian token files (convert/make_data.py's train.u16, the teacher's
samples of convert/sample_teacher.py, or their .xz), windows drawn at uniform random starts, seeded by (seed, step,
micro-batch) so that a resumed run reads exactly what an uninterrupted one would. When a file has a manifest.json
beside it (make_data.py's), the tokens seen are also counted per source."""
import bisect
import hashlib
import json
import lzma
import os

import numpy as np
import torch


def read_tokens(path):
    raw = lzma.open(path).read() if path.endswith(".xz") else open(path, "rb").read()
    if len(raw) % 2:
        raise ValueError(f"{path}: odd size, not uint16 tokens")
    return np.frombuffer(raw, dtype="<u2"), hashlib.sha256(raw).hexdigest()


class Tokens:
    def __init__(self, paths, vocab=None):
        self.files, parts = [], []
        offset = 0
        self.source_starts, self.source_names = [], []
        for p in paths:
            arr, sha = read_tokens(p)
            if vocab is not None and len(arr) and int(arr.max()) >= vocab:
                raise ValueError(f"{p}: token id {int(arr.max())} past the model's vocab {vocab}")
            man = os.path.join(os.path.dirname(p), "manifest.json")
            sources = None
            if os.path.exists(man):
                m = json.load(open(man))
                split = "val" if os.path.basename(p).startswith("val") else "train"
                pos, sources, before = 0, {}, len(self.source_starts)
                for d in m.get("documents", []):
                    if d["split"] != split:
                        continue
                    src = d["name"].split("/")[0]
                    self.source_starts.append(offset + pos)
                    self.source_names.append(src)
                    sources[src] = sources.get(src, 0) + d["tokens"]
                    pos += d["tokens"]
                if pos != len(arr):
                    del self.source_starts[before:], self.source_names[before:]
                    sources = None
            if sources is None:
                self.source_starts.append(offset)
                self.source_names.append(os.path.basename(p))
            self.files.append({"path": p, "tokens": int(len(arr)), "sha256": sha, "sources": sources})
            parts.append(arr)
            offset += len(arr)
        self.arr = np.concatenate(parts) if len(parts) > 1 else parts[0]
        self.n = len(self.arr)
        self.seen = {}

    def batch(self, batch, length, seed, step, micro=0, counted=None):
        """[batch, length] int64 windows at random starts; `counted` tokens of each (default all) are added to
        self.seen under the source the window starts in."""
        if self.n < length + 1:
            raise ValueError(f"{self.n} tokens, fewer than one window of {length}")
        rng = np.random.default_rng([seed, step, micro])
        starts = rng.integers(0, self.n - length + 1, size=batch)
        out = np.stack([self.arr[s:s + length] for s in starts]).astype(np.int64)
        for s in starts:
            i = bisect.bisect_right(self.source_starts, int(s)) - 1
            name = self.source_names[i]
            self.seen[name] = self.seen.get(name, 0) + (counted or length)
        return torch.from_numpy(out)

    def sequential(self, batch, length, count):
        """`count` windows spread evenly over the file (validation: every source in its share), in batches."""
        wins = min(count, self.n // length)
        stride = self.n // max(wins, 1)
        starts = [i * stride for i in range(wins)]
        for i in range(0, wins, batch):
            yield torch.from_numpy(np.stack([self.arr[s:s + length] for s in starts[i:i + batch]]).astype(np.int64))
