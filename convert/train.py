#!/usr/bin/env python3
"""The conversion's training jobs (convert/README.md says the recipe and its choices):

    convert/train.py stage1  --model M --data TRAIN.u16[.xz] --out DIR --tokens 8M     attention transfer
    convert/train.py stage2  --model M --maps S1DIR --data ... --out DIR --tokens 8M   LoRA fine-tune of the Orthros
                             [--phases both|linear]                                    model (both phases, or the
                                                                                       linear phase only)
    convert/train.py control --model M --data ... --out DIR --tokens 8M                the same LoRA fine-tune of the
                                                                                       unchanged transformer

Every job is seeded, writes DIR/log.json (losses per step, tokens seen per source, seconds, GPU, versions) and
DIR/ckpt.pt; `--max-seconds S` saves and exits with status 3 before S seconds have passed, and `--resume` goes on
from DIR/ckpt.pt; a finished job writes DIR/adapter/ (docs/converted-models.md) and exits 0. Progress on stderr.
On cuda: bf16 autocast over float32 master weights (the linear formula and the losses in float32).
"""
import argparse
import json
import math
import os
import platform
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from convert import ckpt  # noqa: E402
from convert.data import Tokens  # noqa: E402
from convert.model import Arch, Model, full_attention, rmsnorm  # noqa: E402

STOPPED = 3  # exit status of a job stopped by --max-seconds (resumable)


def count(s):
    """'16M', '512K', '1000' -> int."""
    s = str(s).strip().upper()
    mult = {"K": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9}.get(s[-1:], 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def log(msg):
    print(f"convert: {msg}", file=sys.stderr, flush=True)


def environment(device):
    env = {"torch": torch.__version__, "python": platform.python_version(), "host": platform.node(),
           "device": str(device)}
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["cuda"] = torch.version.cuda
    else:
        env["gpu"] = None
        env["cpu_threads"] = torch.get_num_threads()
    return env


def common_args(ap):
    ap.add_argument("--model", required=True, help="base model: a Hugging Face directory (orthros export) or GGUF")
    ap.add_argument("--data", required=True, action="append", help="token file (uint16, or .xz); repeatable")
    ap.add_argument("--out", required=True, help="job directory")
    ap.add_argument("--tokens", required=True, help="training tokens (e.g. 8M)")
    ap.add_argument("--seq", type=int, default=1024, help="sequence length (default 1024)")
    ap.add_argument("--batch", type=int, default=32, help="sequences per optimizer step (default 32)")
    ap.add_argument("--micro-batch", type=int, default=0, help="sequences per forward (default: the batch)")
    ap.add_argument("--lr", type=float, help="peak learning rate (stage1 1e-2, else 1e-3)")
    ap.add_argument("--warmup", type=int, default=20, help="linear warm-up steps (default 20)")
    ap.add_argument("--min-lr-ratio", type=float, default=0.1, help="cosine decay to this fraction (default 0.1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--device", default="auto", help="cpu|cuda|auto")
    ap.add_argument("--threads", type=int, default=0, help="cpu threads (default: torch's)")
    ap.add_argument("--max-seconds", type=float, default=0, help="save and exit (status 3) before this many seconds")
    ap.add_argument("--resume", action="store_true", help="go on from OUT/ckpt.pt")
    ap.add_argument("--compile", action="store_true", help="torch.compile the linear formula (eager fallback)")
    ap.add_argument("--log-every", type=int, default=10, help="stderr progress every N steps")
    ap.add_argument("--val-data", help="validation tokens (default: val.u16 beside the first --data, if present)")
    ap.add_argument("--val-windows", type=int, default=64, help="validation windows of --seq tokens (default 64)")
    ap.add_argument("--rope-offset-max", type=int, default=0,
                    help="each training sequence's RoPE positions start at a seeded random offset in [0, M] instead "
                         "of 0 (softmax attention is blind to it; feature maps after RoPE then see the rotations of "
                         "positions up to M + --seq; default 0: none; validation always starts at 0)")
    ap.add_argument("--adapter-dtype", choices=["bf16", "f32"], default="bf16",
                    help="dtype of adapter.safetensors (default bf16: the trained tensors are rounded to it before "
                         "the validation, so what is measured is what ships)")


def attention_args(ap):
    ap.add_argument("--feature-dim", type=int, default=0, help="hedgehog columns per map, F/2 (default head_dim)")
    ap.add_argument("--fm-init", choices=["identity", "kaiming"], default="identity",
                    help="hedgehog init: LoLCATs' identity flag (default) or its kaiming default")
    ap.add_argument("--window", type=int, default=64, help="local softmax window W (default 64)")
    ap.add_argument("--feature-map-rope", choices=["before", "after"], default="after")
    ap.add_argument("--init-maps", help="start from this adapter's feature maps and gates (a directory; default: "
                                        "--fm-init, gates at sigmoid 0.1)")


def lora_args(ap):
    ap.add_argument("--lora-r", type=int, default=8)
    ap.add_argument("--lora-alpha", type=float, default=16.0)
    ap.add_argument("--lora-mlp", action="store_true", help="LoRA on gate/up/down too")
    ap.add_argument("--ce-weight", type=float, default=1.0, help="next-token cross-entropy weight (default 1)")
    ap.add_argument("--kl-weight", type=float, default=1.0, help="KL(teacher || student) weight (default 1)")


class Job:
    """What every job shares: device, model, data, optimizer, schedule, log, checkpoint, time budget."""

    def __init__(self, a, kind):
        self.a, self.kind = a, kind
        self.t0 = time.time()
        if a.threads:
            torch.set_num_threads(a.threads)
        dev = a.device if a.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
        self.device = torch.device(dev)
        if self.device.type == "cuda":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
        torch.manual_seed(a.seed)
        os.makedirs(a.out, exist_ok=True)
        self.ckpt_path = os.path.join(a.out, "ckpt.pt")
        self.log_path = os.path.join(a.out, "log.json")
        cfg, sd = ckpt.load_model(a.model)
        self.cfg = cfg
        self.model = Model(cfg, sd).to(self.device)
        if a.compile:
            self.model.compile_linear()
        self.data = Tokens(a.data, cfg.vocab)
        val = a.val_data or os.path.join(os.path.dirname(a.data[0]), "val.u16")
        self.val = Tokens([val], cfg.vocab) if os.path.exists(val) else None
        self.total = count(a.tokens)
        self.micro = a.micro_batch or a.batch
        if a.batch % self.micro:
            raise SystemExit(f"--batch {a.batch} is not a multiple of --micro-batch {self.micro}")
        self.steps = max(1, math.ceil(self.total / (a.batch * a.seq)))
        self.step = 0
        self.records = []
        self.run_seconds = 0.0
        self.amp = self.device.type == "cuda"

    def round_to_adapter_dtype(self):
        if self.a.adapter_dtype == "bf16":
            with torch.no_grad():
                for _, p in self.params:
                    p.copy_(p.to(torch.bfloat16).float())

    def autocast(self):
        return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16, enabled=self.amp)

    def make_optimizer(self, params, lr):
        self.params = params
        self.peak_lr = lr
        fused = self.device.type == "cuda"
        self.opt = torch.optim.AdamW([p for _, p in params], lr=lr, betas=(0.9, 0.999), weight_decay=0.0,
                                     fused=fused)

    def lr_at(self, step):
        w = min(self.a.warmup, max(1, self.steps // 10))
        if step < w:
            return self.peak_lr * (step + 1) / w
        prog = (step - w) / max(1, self.steps - w)
        r = self.a.min_lr_ratio
        return self.peak_lr * (r + (1 - r) * 0.5 * (1 + math.cos(math.pi * min(1.0, prog))))

    def header(self, extra):
        a = self.a
        return {"schema": 1, "job": self.kind, "argv": sys.argv, "seed": a.seed, "model": a.model,
                "model_config": {k: getattr(self.cfg, k) for k in ("hidden", "ffn", "layers", "n_heads", "n_kv",
                                                                  "head_dim", "vocab")},
                "data": self.data.files, "val_data": self.val.files if self.val else None,
                "tokens_planned": self.total, "steps_planned": self.steps, "batch": a.batch, "micro_batch": self.micro,
                "seq": a.seq, "peak_lr": self.peak_lr, "warmup": a.warmup, "min_lr_ratio": a.min_lr_ratio,
                "environment": environment(self.device), **extra}

    def save_log(self, extra, done=False, val=None):
        h = self.header(extra)
        h.update({"steps_done": self.step, "tokens_seen": self.step * self.a.batch * self.a.seq,
                  "tokens_seen_by_source": dict(sorted(self.data.seen.items())), "seconds": round(self.run_seconds, 3),
                  "done": done, "steps": self.records})
        if val is not None:
            h["validation"] = val
        tmp = self.log_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(h, f, indent=1)
        os.replace(tmp, self.log_path)

    def save_ckpt(self):
        st = {"kind": self.kind, "step": self.step, "params": {n: p.detach().cpu() for n, p in self.params},
              "opt": self.opt.state_dict(), "records": self.records, "seen": self.data.seen,
              "run_seconds": self.run_seconds, "args": self.resume_key()}
        tmp = self.ckpt_path + ".tmp"
        torch.save(st, tmp)
        os.replace(tmp, self.ckpt_path)

    def resume_key(self):
        """What must match for a checkpoint to be resumed: the options that change the result (paths aside: the
        data by sha256, so that a job directory moved to another machine resumes)."""
        k = {n: v for n, v in vars(self.a).items() if n not in ("resume", "max_seconds", "log_every", "compile",
                                                                "threads", "device", "out", "maps", "data",
                                                                "val_data", "model")}
        for young in ("rope_offset_max", "init_maps"):  # options younger than some checkpoints: absent means unset
            if not k.get(young):
                k.pop(young, None)
        k["data_sha256"] = [f["sha256"] for f in self.data.files]
        k["model_name"] = os.path.basename(os.path.normpath(self.a.model))
        return k

    def rope_offset(self, step, micro):
        """The RoPE offset of a micro-batch: seeded, in [0, --rope-offset-max]."""
        if not self.a.rope_offset_max:
            return 0
        g = torch.Generator().manual_seed(self.a.seed * 7919 + step * 104729 + micro)
        return int(torch.randint(0, self.a.rope_offset_max + 1, (1,), generator=g))

    def try_resume(self):
        if not self.a.resume or not os.path.exists(self.ckpt_path):
            return
        st = torch.load(self.ckpt_path, map_location="cpu", weights_only=False)
        mine = self.resume_key()
        diff = [k for k in mine if st["args"].get(k) != mine[k]]
        if st["kind"] != self.kind or diff:
            raise SystemExit(f"{self.ckpt_path}: made by a different job ({', '.join(diff) or st['kind']} differ); "
                             "use another --out or the same options")
        named = dict(self.params)
        for n, t in st["params"].items():
            named[n].data.copy_(t.to(self.device))
        self.opt.load_state_dict(st["opt"])
        self.step, self.records, self.data.seen = st["step"], st["records"], st["seen"]
        self.run_seconds = st["run_seconds"]
        log(f"{self.kind}: resumed at step {self.step} of {self.steps}")

    def loop(self, train_step, extra, finish):
        """Runs train_step(step) -> dict of floats until done or the time budget; returns the exit status."""
        a = self.a
        self.try_resume()
        if self.step >= self.steps and os.path.exists(os.path.join(a.out, "adapter", "config.json")):
            log(f"{self.kind}: already done ({self.steps} steps)")
            return 0
        step_time, save_time = None, 2.0
        while self.step < self.steps:
            now = time.time()
            if a.max_seconds and step_time is not None and \
                    now - self.t0 + 1.5 * step_time + save_time + 10 > a.max_seconds:
                t = time.time()
                self.save_ckpt()
                self.save_log(extra)
                log(f"{self.kind}: stopped at step {self.step} of {self.steps} (--max-seconds {a.max_seconds:g}); "
                    f"saved in {time.time() - t:.1f} s: run again with --resume")
                return STOPPED
            for g in self.opt.param_groups:
                g["lr"] = self.lr_at(self.step)
            t = time.time()
            vals = train_step(self.step)
            if self.device.type == "cuda":
                torch.cuda.synchronize()
            dt = time.time() - t
            step_time = dt if step_time is None else 0.9 * step_time + 0.1 * dt
            self.run_seconds += dt
            self.step += 1
            rec = {"step": self.step, "lr": self.lr_at(self.step - 1), **{k: round(v, 6) for k, v in vals.items()},
                   "tokens": self.step * a.batch * a.seq, "seconds": round(self.run_seconds, 3)}
            self.records.append(rec)
            if self.step % a.log_every == 0 or self.step == self.steps or self.step == 1:
                tps = self.step * a.batch * a.seq / max(self.run_seconds, 1e-9)
                log(f"{self.kind}: step {self.step}/{self.steps} " +
                    " ".join(f"{k} {v:.4g}" for k, v in vals.items() if not k.startswith("mse_l")) +
                    f" lr {rec['lr']:.3g} {tps:.0f} tok/s {self.run_seconds:.0f} s")
        val = finish()
        self.save_ckpt()
        self.save_log(extra, done=True, val=val)
        log(f"{self.kind}: done, {self.steps} steps, {self.run_seconds:.1f} s; adapter in {a.out}/adapter")
        return 0


# ---- stage 1: attention transfer ----

def stage1(a):
    job = Job(a, "stage1")
    m, c = job.model, job.cfg
    half = a.feature_dim or c.head_dim
    m.init_feature_maps(half, a.fm_init, a.seed)
    arch = Arch("linear", "hedgehog", feature_dim=half, feature_map_rope=a.feature_map_rope,
                local_window=a.window).check()
    if a.init_maps:
        # go on from an adapter's maps and gates (float32 from here on), e.g. to train them further with offsets
        acfg, tensors, _ = ckpt.load_adapter(a.init_maps)
        o = (acfg or {}).get("orthros") or {}
        want = {"feature_dim": half, "local_window": a.window, "feature_map_rope": a.feature_map_rope}
        if any(o.get(k) != v for k, v in want.items()):
            raise SystemExit(f"--init-maps {a.init_maps}: its maps are {', '.join(f'{k} {o.get(k)}' for k in want)}; "
                             f"this job's are {', '.join(f'{k} {v}' for k, v in want.items())}")
        m.load_adapter_tensors({k: v for k, v in tensors.items() if "lora_" not in k}, None)
        for at in m.attn:
            if at.gamma_fixed is not None:
                raise SystemExit(f"--init-maps {a.init_maps}: a window gate outside (0, 1) cannot be trained")
            at.fm_q = torch.nn.Parameter(at.fm_q.detach().float())
            at.fm_k = torch.nn.Parameter(at.fm_k.detach().float())
            at.gate_logit = torch.nn.Parameter(at.gate_logit.detach().float())
    params = []
    for i, at in enumerate(m.attn):
        p = f"model.layers.{i}.self_attn."
        params += [(p + "feature_map_q.weight", at.fm_q), (p + "feature_map_k.weight", at.fm_k),
                   (p + "window_gate_logit", at.gate_logit)]
    job.make_optimizer(params, a.lr or 1e-2)
    L = c.layers
    extra = {"recipe": {"trainable": "hedgehog feature maps (q per query head, k per kv head) and window gates",
                        "loss": "1000 x mean over layers of MSE(student attention output, teacher softmax attention "
                                "output), per head before o_proj, every position",
                        "feature_dim": half, "fm_init": a.fm_init, "local_window": a.window,
                        "feature_map_rope": a.feature_map_rope, "gate_init_logit": -2.1972245773362196,
                        "rope_offset_max": a.rope_offset_max, "init_maps": a.init_maps}}

    def layer_losses(ids, offset):
        """Teacher forward (no grad) passing its own softmax output on; each layer's student loss backpropagated at
        once (layers are independent), so only one layer's graph is alive at a time."""
        losses = []
        with torch.no_grad(), job.autocast():
            x = F.embedding(ids, m.embed)
            cos, sin = m.rope_for(ids.shape[1], ids.device, offset)
            for i in range(L):
                h = rmsnorm(x, m.ln1[i], c.eps)
                q, k, v, qr, kr = m.qkv(i, h, cos, sin)
                y = full_attention(qr, kr, v)
                with torch.enable_grad():
                    o = m.linear(i, arch, q, k, v, qr, kr)
                    loss = F.mse_loss(o, y.float())
                    (loss * 1000.0 / L * ids.shape[0] / a.batch).backward()
                losses.append(float(loss))
                x = x + m.attn_out(i, y)
                x = x + m.mlp_out(i, rmsnorm(x, m.ln2[i], c.eps))
        return losses

    def train_step(step):
        job.opt.zero_grad(set_to_none=True)
        per_layer = [0.0] * L
        for mb in range(a.batch // job.micro):
            ids = job.data.batch(job.micro, a.seq, a.seed, step, mb).to(job.device)
            for i, l in enumerate(layer_losses(ids, job.rope_offset(step, mb))):
                per_layer[i] += l * job.micro / a.batch
        job.opt.step()
        out = {"loss": 1000.0 * sum(per_layer) / L}
        out.update({f"mse_l{i}": v for i, v in enumerate(per_layer)} if step % 25 == 0 else {})
        return out

    def finish():
        val = None
        job.round_to_adapter_dtype()
        if job.val:
            tot, n = [0.0] * L, 0
            for ids in job.val.sequential(job.micro, a.seq, a.val_windows):
                ids = ids.to(job.device)
                with torch.no_grad(), job.autocast():
                    x = F.embedding(ids, m.embed)
                    cos, sin = m.rope_for(ids.shape[1], ids.device)
                    for i in range(L):
                        h = rmsnorm(x, m.ln1[i], c.eps)
                        q, k, v, qr, kr = m.qkv(i, h, cos, sin)
                        y = full_attention(qr, kr, v)
                        tot[i] += float(F.mse_loss(m.linear(i, arch, q, k, v, qr, kr), y.float())) * ids.shape[0]
                        x = x + m.attn_out(i, y)
                        x = x + m.mlp_out(i, rmsnorm(x, m.ln2[i], c.eps))
                n += ids.shape[0]
            val = {"windows": n, "loss": 1000.0 * sum(tot) / L / max(n, 1),
                   "mse_per_layer": [t / max(n, 1) for t in tot]}
            log(f"stage1: validation loss {val['loss']:.4g} over {n} windows")
        t, _ = m.adapter_tensors(maps=True, lora=False)
        arch_out = Arch("orthros", "hedgehog", feature_dim=half, feature_map_rope=a.feature_map_rope,
                        local_window=a.window, tail=1)
        ckpt.save_adapter(os.path.join(a.out, "adapter"), ckpt.base_reference(a.model), arch_out.to_json(), t,
                          dtype=a.adapter_dtype)
        return val

    return job.loop(train_step, extra, finish)


# ---- stage 2 and the control: LoRA fine-tunes ----

def finetune(a, kind):
    job = Job(a, kind)
    m, c = job.model, job.cfg
    if kind == "stage2":
        _, tensors, _ = ckpt.load_adapter(os.path.join(a.maps, "adapter"))
        m.load_adapter_tensors({k: v for k, v in tensors.items() if "lora_" not in k}, None)
        for at in m.attn:
            for p in (at.fm_q, at.fm_k, at.gate_logit):
                if p is not None:
                    p.requires_grad_(False)
        mc = json.load(open(os.path.join(a.maps, "adapter", "config.json")))["orthros"]
        base_arch = Arch.from_json(mc, c.head_dim)
    else:
        base_arch = Arch("transformer")
    m.add_lora(a.lora_r, a.lora_alpha, mlp=a.lora_mlp, seed=a.seed)
    params = []
    for name, lin in m.named_projections():
        if lin.lora_A is not None:
            params += [(name + ".lora_A.weight", lin.lora_A), (name + ".lora_B.weight", lin.lora_B)]
    job.make_optimizer(params, a.lr or 1e-3)
    phases = getattr(a, "phases", None)
    teacher = Arch("transformer")
    extra = {"recipe": {"trainable": f"LoRA r {a.lora_r} alpha {a.lora_alpha} on q/k/v/o" +
                        ("/gate/up/down" if a.lora_mlp else ""),
                        "loss": f"{a.ce_weight} x next-token cross-entropy + {a.kl_weight} x KL(teacher || student), "
                                "mean over positions",
                        "architecture": base_arch.to_json(), "phases": phases,
                        "tail_range": [a.tail_min, a.tail_max] if phases == "both" else None,
                        "rope_offset_max": a.rope_offset_max,
                        "maps": a.maps if kind == "stage2" else None}}

    def tail_for(step, mb):
        if kind == "control" or phases == "linear":
            return None
        g = torch.Generator().manual_seed(a.seed * 1000003 + step * 997 + mb)
        return int(torch.randint(a.tail_min, a.tail_max + 1, (1,), generator=g))

    def arch_for():
        if kind == "control":
            return base_arch
        if phases == "linear":
            return Arch("linear", base_arch.feature_map, base_arch.feature_dim, base_arch.feature_map_rope,
                        base_arch.local_window)
        return base_arch

    arch = arch_for()

    def losses(ids, T, offset):
        inp, tgt = ids[:, :-1], ids[:, 1:]
        with job.autocast():
            logits = m(inp, arch, tail=T, offset=offset).float()
        logp = F.log_softmax(logits, dim=-1)
        ce_tok = -logp.gather(-1, tgt[..., None])[..., 0]
        kl_tok = torch.zeros_like(ce_tok)
        if a.kl_weight:
            m.set_lora_enabled(False)
            with torch.no_grad(), job.autocast():
                tlogp = F.log_softmax(m(inp, teacher, offset=offset).float(), dim=-1)
            m.set_lora_enabled(True)
            kl_tok = (tlogp.exp() * (tlogp - logp)).sum(-1)
        return ce_tok, kl_tok

    def train_step(step):
        job.opt.zero_grad(set_to_none=True)
        out = {"loss": 0.0, "ce": 0.0, "kl": 0.0}
        tails = []
        for mb in range(a.batch // job.micro):
            ids = job.data.batch(job.micro, a.seq + 1, a.seed, step, mb, counted=a.seq).to(job.device)
            T = tail_for(step, mb)
            ce_tok, kl_tok = losses(ids, T, job.rope_offset(step, mb))
            loss = a.ce_weight * ce_tok.mean() + a.kl_weight * kl_tok.mean()
            (loss * job.micro / a.batch).backward()
            w = job.micro / a.batch
            ce_tok, kl_tok = ce_tok.detach(), kl_tok.detach()
            out["loss"] += loss.item() * w
            out["ce"] += ce_tok.mean().item() * w
            out["kl"] += kl_tok.mean().item() * w
            if T:
                n = a.seq
                out["ce_linear"] = out.get("ce_linear", 0.0) + ce_tok[:, :n - T].mean().item() * w
                out["ce_tail"] = out.get("ce_tail", 0.0) + ce_tok[:, n - T:].mean().item() * w
                tails.append(T)
        job.opt.step()
        if tails:
            out["tail"] = sum(tails) / len(tails)
        return out

    def finish():
        val = None
        job.round_to_adapter_dtype()
        if job.val:
            val = {}
            evals = {"transformer": Arch("transformer")} if kind == "control" else {
                "orthros_tail1": Arch(**{**base_arch.__dict__, "name": "orthros", "tail": 1}),
                "orthros_tail64": Arch(**{**base_arch.__dict__, "name": "orthros", "tail": 64}),
                "linear": Arch(**{**base_arch.__dict__, "name": "linear"})}
            for name, ar in evals.items():
                tot, n = 0.0, 0
                for ids in job.val.sequential(job.micro, a.seq + 1, a.val_windows):
                    ids = ids.to(job.device)
                    with torch.no_grad(), job.autocast():
                        lg = m(ids[:, :-1], ar).float()
                    tot += float(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), ids[:, 1:].reshape(-1))) * ids.shape[0]
                    n += ids.shape[0]
                val[name] = {"windows": n, "ce": tot / max(n, 1), "ppl": math.exp(tot / max(n, 1))}
                log(f"{kind}: validation {name}: ce {val[name]['ce']:.4f} ppl {val[name]['ppl']:.3f} ({n} windows)")
        t, alpha = m.adapter_tensors(maps=kind == "stage2", lora=True)
        obj = base_arch.to_json() if kind == "stage2" else {"architecture": "transformer"}
        ckpt.save_adapter(os.path.join(a.out, "adapter"), ckpt.base_reference(a.model), obj, t, alpha,
                          dtype=a.adapter_dtype)
        return val

    return job.loop(train_step, extra, finish)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s1 = sub.add_parser("stage1", help="attention transfer: feature maps and window gates")
    common_args(s1)
    attention_args(s1)
    s2 = sub.add_parser("stage2", help="LoRA fine-tune of the Orthros model")
    common_args(s2)
    lora_args(s2)
    s2.add_argument("--maps", required=True, help="a finished stage1 job directory")
    s2.add_argument("--phases", choices=["both", "linear"], default="both",
                    help="both: linear prefix + a full-attention tail per sequence (default); linear: linear only")
    s2.add_argument("--tail-min", type=int, default=64)
    s2.add_argument("--tail-max", type=int, default=256)
    ct = sub.add_parser("control", help="the same LoRA fine-tune of the unchanged transformer")
    common_args(ct)
    lora_args(ct)
    a = ap.parse_args(argv)
    if a.cmd == "stage1":
        return stage1(a)
    if a.cmd == "stage2":
        if a.phases == "both" and not (1 <= a.tail_min <= a.tail_max < a.seq):
            ap.error("need 1 <= --tail-min <= --tail-max < --seq")
        return finetune(a, "stage2")
    a.tail_min = a.tail_max = None
    return finetune(a, "control")


if __name__ == "__main__":
    sys.exit(main())
