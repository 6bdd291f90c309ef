#!/usr/bin/env python3
"""Whether the memory idles inside a captured decode step (ci/gpu-pm-sampling.sh; docs/kernels.md, "The step's
timeline"): Nsight Compute's PM sampling of one whole replayed step graph (`ncu --graph-profiling graph --section
PmSampling`) gives the DRAM throughput as a time series of samples across the step, kernel boundaries included,
which the per-kernel profiles (each kernel alone) and the clock stamps (when a kernel's blocks ran, not what the
memory did) cannot.

Two commands:
  dump REPORT.ncu-rep OUT.csv   (on the GPU machine: Nsight Compute's Python module `ncu_report`, from
      NCU_PYTHON, the extras/python folder beside ncu or under /opt/nvidia/nsight-compute) every PM sampling series
      of every profiled result ("pmsampling:" names, or "UNIT.TriageCompute." ones in Nsight Compute 2025) and each
      kernel's start and end (profiler__timestamp_workload_*) as rows result,metric,index,t,value (t: the sample's
      timestamp, ns, as the report's correlation ids give it; series without them, and samples stamped 0, left out).
  summary SERIES.csv [--metric NAME] [--below PCT] [--cols N] [--layers N:P:F [--peak-tbps T]]   (anywhere; standard library
      only) per result, the DRAM series (the first of DRAM_METRICS present, or --metric), cut to the profiled
      kernels' span where the file has their timestamps: samples, span, interval, the mean; the share of the span in
      bands of % of peak; the stretches below PCT (default 50): how many, their total, the longest; a line of N
      columns (default 100), each the mean of its share of the span as a digit, 0 for under 10% of peak to 9 for
      90% and more; and with --layers (N layers of P launches after the first F), per launch of a layer the window
      from the launch before it ending to its own end (what it adds to the step): its mean length, the series' mean
      in it and its first sample's, and each launch outside the layers alike; with --peak-tbps (the memory's peak in
      TB/s, which the series' percentages are of: ~3.35 for an H100's HBM3, ~4.8 for an H200's HBM3e) also the MB
      read in the window, mean x window x peak: which launch's window the bytes of another fell in.
usage: python3 bench/kernels/pm_sampling.py dump REPORT.ncu-rep OUT.csv
       python3 bench/kernels/pm_sampling.py summary SERIES.csv [--metric NAME] [--below PCT] [--cols N] [--layers N:P:F]
           [--peak-tbps T]"""
import csv
import glob
import os
import shutil
import sys

DRAM_METRICS = ("FBSP.TriageCompute.dramc__read_throughput.avg.pct_of_peak_sustained_elapsed",
                "FBSP.TriageCompute.dramc__throughput.avg.pct_of_peak_sustained_elapsed",
                "pmsampling:dram__throughput.avg.pct_of_peak_sustained_elapsed",
                "pmsampling:dram__bytes_read.sum.pct_of_peak_sustained_elapsed",
                "pmsampling:dram__bytes.avg.pct_of_peak_sustained_elapsed")
BANDS = (0, 25, 50, 75, 90)
HEADER = ["result", "metric", "index", "t", "value"]
STARTS, ENDS = "profiler__timestamp_workload_start_0", "profiler__timestamp_workload_end_0"


def die(msg):
    raise SystemExit("pm_sampling.py: " + msg)


def import_ncu_report():
    """Nsight Compute's report module: NCU_PYTHON, else extras/python beside the ncu on the path, else under
    /opt/nvidia/nsight-compute (the newest first)."""
    dirs = [os.environ["NCU_PYTHON"]] if os.environ.get("NCU_PYTHON") else []
    ncu = shutil.which("ncu")
    if ncu:
        dirs.append(os.path.join(os.path.dirname(os.path.realpath(ncu)), "extras", "python"))
    dirs += sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)  # where CUDA's ncu is a script
    sys.path[:0] = dirs
    try:
        import ncu_report  # pylint: disable=import-outside-toplevel
    except ImportError as e:
        die("no Nsight Compute Python module (ncu_report) in %s: %s" % (dirs or "(no ncu on the path)", e))
    return ncu_report


def dump(report, out):
    ncu_report = import_ncu_report()
    try:
        ctx = ncu_report.load_report(report)
    except Exception as e:  # the module raises its own types
        die("cannot load %s: %s" % (report, e))
    rows, result = [], 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            for name in sorted(act.metric_names()):
                # the series: "pmsampling:" names, or (Nsight Compute 2025) "UNIT.TriageCompute." ones; and each
                # kernel's start and end in the same clock (profiler__timestamp_workload_*)
                kern = name.startswith("profiler__timestamp_workload_")
                if not (name.startswith("pmsampling:") or ".TriageCompute." in name or kern):
                    continue
                m = act.metric_by_name(name)
                n = m.num_instances()
                ts = m.correlation_ids() if n and m.has_correlation_ids() else None
                if ts is None:
                    continue
                for i in range(n):
                    t = ts.as_uint64(i)
                    if t:  # a sample stamped 0 carries no time
                        rows.append([result, name, i, t, m.as_double(i)])
            result += 1
    if not rows:
        die("%s holds no PM sampling series (was --section PmSampling collected?)" % report)
    with open(out, "w", newline="", encoding="ascii") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)
    print("%d samples of %d results written to %s" % (len(rows), result, out))


def read_series(path):
    """{result: {metric: [(t, value), ...] sorted by t}}; a file not of dump's columns is refused."""
    series = {}
    try:
        with open(path, newline="", encoding="ascii") as f:
            rd = csv.reader(f)
            if next(rd, None) != HEADER:
                die("%s: not a PM sampling series file (its first line is not %s)" % (path, ",".join(HEADER)))
            for n, row in enumerate(rd, 2):
                if len(row) != 5:
                    die("%s:%d: %d fields, not 5" % (path, n, len(row)))
                try:
                    res, t, v = int(row[0]), float(row[3]), float(row[4])
                except ValueError:
                    die("%s:%d: result, t and value must be numbers" % (path, n))
                if v != v or t != t:
                    die("%s:%d: a NaN" % (path, n))
                series.setdefault(res, {}).setdefault(row[1], []).append((t, v))
    except (OSError, UnicodeDecodeError) as e:
        die("cannot read %s: %s" % (path, e))
    for metrics in series.values():
        for s in metrics.values():
            s.sort()
    return series


def stretches(samples, dt, below):
    """(start, length) of every run of samples under `below`, each sample standing for dt from its timestamp."""
    runs, start, last = [], None, None
    for t, v in samples:
        if v < below:
            if start is None:
                start = t
            last = t
        elif start is not None:
            runs.append((start, last - start + dt))
            start = None
    if start is not None:
        runs.append((start, last - start + dt))
    return runs


def summarize(samples, below, cols):
    t0 = samples[0][0]
    diffs = sorted(b[0] - a[0] for a, b in zip(samples, samples[1:]))
    dt = diffs[len(diffs) // 2] if diffs else 0.0
    span = samples[-1][0] - t0 + dt
    vals = [v for _, v in samples]
    lines = ["%d samples over %.1f us, one every %.3f us; mean %.1f%% of peak" %
             (len(samples), span / 1e3, dt / 1e3, sum(vals) / len(vals))]
    bands = []
    for i, lo in enumerate(BANDS):
        hi = BANDS[i + 1] if i + 1 < len(BANDS) else None
        k = sum(1 for v in vals if v >= lo and (hi is None or v < hi))
        label = "%d-%d%%" % (lo, hi) if hi is not None else ">= %d%%" % lo
        bands.append("%s: %.1f%%" % (label, 100.0 * k / len(vals)))
    lines.append("share of the samples by %% of peak: %s" % ", ".join(bands))
    runs = stretches(samples, dt, below)
    total = sum(l for _, l in runs)
    lines.append("below %g%%: %d stretches, %.1f us in all (%.1f%% of the span), mean %.2f us" %
                 (below, len(runs), total / 1e3, 100.0 * total / span if span else 0.0,
                  total / len(runs) / 1e3 if runs else 0.0))
    for s, l in sorted(runs, key=lambda r: -r[1])[:5]:
        lines.append("  %.2f us from %.1f us" % (l / 1e3, (s - t0) / 1e3))
    if cols > 0 and span > 0:
        sums, counts = [0.0] * cols, [0] * cols
        for t, v in samples:
            c = min(cols - 1, int((t - t0) / span * cols))
            sums[c] += v
            counts[c] += 1
        lines.append("timeline (%d columns of %.2f us, 0-9: tenths of peak, '.' no sample):" % (cols, span / cols / 1e3))
        lines.append("".join(str(min(9, int(sums[c] / counts[c] // 10))) if counts[c] else "." for c in range(cols)))
    return lines


def windows(samples, start, ends, layers):
    """Per launch of a layer (N layers of P launches after the first F) and per launch outside them, the window from
    the launch before it ending (the first: the span's start) to its own end: mean length (us), the series' mean in
    it and its first sample's (None where no sample fell in it)."""
    n, p, f = layers
    if f + n * p > len(ends):
        die("--layers %d:%d:%d: %d launches, the file has %d" % (n, p, f, f + n * p, len(ends)))
    wins, prev, k = [], start, 0
    for e in ends:
        vs = []
        while k < len(samples) and samples[k][0] <= e:
            if samples[k][0] > prev:
                vs.append(samples[k][1])
            k += 1
        wins.append((e - prev, vs))
        prev = e

    def row(ws):
        vals = [v for _, vs in ws for v in vs]
        firsts = [vs[0] for _, vs in ws if vs]
        return (sum(l for l, _ in ws) / len(ws) / 1e3, sum(vals) / len(vals) if vals else None,
                sum(firsts) / len(firsts) if firsts else None)

    out = [("before %d" % i, row([wins[i]])) for i in range(f)]
    out += [("layer %d of %d" % (j + 1, p), row([wins[f + l * p + j] for l in range(n)])) for j in range(p)]
    out += [("after %d" % (i - f - n * p), row([wins[i]])) for i in range(f + n * p, len(wins))]
    return out


def fmt(v):
    return "-" if v is None else "%.1f" % v


def summary(path, metric, below, cols, layers, peak):
    series = read_series(path)
    for res in sorted(series):
        metrics = series[res]
        name = metric if metric else next((m for m in DRAM_METRICS if m in metrics), None)
        if name is None or name not in metrics:
            have = ", ".join(sorted(m for m in metrics if "dram" in m)) or "none with dram in its name"
            die("result %d: no %s series (DRAM series there: %s)" % (res, metric or "DRAM", have))
        samples = metrics[name]
        starts, ends = [t for t, _ in metrics.get(STARTS, [])], [t for t, _ in metrics.get(ENDS, [])]
        span, t0 = "", None
        if starts and ends:
            t0, t1 = min(starts), max(ends)
            samples = [s for s in samples if t0 <= s[0] <= t1]
            span = ", cut to its %d kernels' span (%.1f us)" % (len(ends), (t1 - t0) / 1e3)
            if not samples:
                die("result %d: no sample of %s within its kernels' span" % (res, name))
        elif layers:
            die("result %d: --layers needs the kernels' timestamps (%s, %s), which the file lacks" % (res, STARTS, ENDS))
        print("result %d: %s%s" % (res, name, span))
        for line in summarize(samples, below, cols):
            print("  " + line)
        if layers:
            print("  %-14s %10s %8s %8s%s" % ("launch", "window us", "mean %", "first %", "  read MB" if peak else ""))
            for label, (us, mean, first) in windows(samples, t0, sorted(ends), layers):
                mb = "" if not peak else "  %7s" % ("-" if mean is None else "%.2f" % (mean / 100 * us * peak))
                print("  %-14s %10.2f %8s %8s%s" % (label, us, fmt(mean), fmt(first), mb))


def main(argv):
    if len(argv) == 3 and argv[0] == "dump":
        return dump(argv[1], argv[2])
    if len(argv) >= 2 and argv[0] == "summary":
        metric, below, cols, layers, peak, i = None, 50.0, 100, None, None, 2
        while i < len(argv):
            a = argv[i]
            if i + 1 >= len(argv) or a not in ("--metric", "--below", "--cols", "--layers", "--peak-tbps"):
                die("unknown or incomplete option %r (the usage is at the top of this file)" % a)
            v = argv[i + 1]
            try:
                if a == "--metric":
                    metric = v
                elif a == "--layers":
                    layers = tuple(int(x) for x in v.split(":"))
                    if len(layers) != 3 or not (1 <= layers[0] <= 1000 and 1 <= layers[1] <= 64 and
                                                0 <= layers[2] <= 64):
                        raise ValueError
                elif a == "--below":
                    below = float(v)
                    if not 0 < below <= 100:
                        raise ValueError
                elif a == "--peak-tbps":
                    peak = float(v)
                    if not 0.1 <= peak <= 100:
                        raise ValueError
                else:
                    cols = int(v)
                    if not 0 <= cols <= 1000:
                        raise ValueError
            except ValueError:
                die("%s %r: out of range (--below 0-100, --cols 0-1000, --layers N:P:F with N 1-1000, P 1-64, F 0-64, "
                    "--peak-tbps 0.1-100)" % (a, v))
            i += 2
        if peak and not layers:
            die("--peak-tbps gives the windows of --layers their bytes: give --layers too")
        return summary(argv[1], metric, below, cols, layers, peak)
    die("usage: pm_sampling.py dump REPORT.ncu-rep OUT.csv | summary SERIES.csv [--metric NAME] [--below PCT] "
        "[--cols N] [--layers N:P:F [--peak-tbps T]]")


if __name__ == "__main__":
    main(sys.argv[1:])
