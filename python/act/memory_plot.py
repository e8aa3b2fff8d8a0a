"""The memory timeline of a training step: bytes live after each op, with
and without its encodings, from act-memory-report's JSON (the static
liveness model of docs/MemoryReport.md), the peaks marked and what is live
at the peak listed. With --buffers, the timelines of lowered steps instead
(act-cpu-pipeline{peak-report=FILE.json}: the buffers the step really
allocates), one line per file, on one figure.

    act-opt step.mlir -act-memory-report=json=report.json -o /dev/null
    python3 -m act.memory_plot report.json -o timeline.svg
    act-opt none.mlir -act-cpu-pipeline=peak-report=none.json -o /dev/null
    act-opt q4.mlir -act-cpu-pipeline=peak-report=q4.json -o /dev/null
    python3 -m act.memory_plot --buffers none.json:none q4.json:4-bit -o timeline.svg
"""

import argparse
import json
import os
import sys


def plot(report, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    graphs = report["graphs"]
    fig, axes = plt.subplots(len(graphs), 1, figsize=(10, 3.5 * len(graphs)), squeeze=False)
    for ax, graph in zip(axes[:, 0], graphs):
        peak = graph["peak_estimate"]
        for key, label, style in (("point_before", "without encodings", "--"),
                                  ("point_after", "with encodings", "-")):
            timeline = peak[key]["timeline"]
            mib = [b / 2**20 for b in timeline]
            line, = ax.plot(range(len(mib)), mib, style, label=label)
            at = max(range(len(mib)), key=lambda i: mib[i]) if mib else 0
            if mib:
                ax.plot([at], [mib[at]], "o", color=line.get_color())
                ax.annotate(f"peak {mib[at]:.2f} MiB\n{peak[key]['op']}", (at, mib[at]),
                            textcoords="offset points", xytext=(5, 5), fontsize=8)
        ax.set_title(f"@{graph['function']} ({graph['form']} form): "
                     f"peak {peak['bytes_before']} -> {peak['bytes_after']} bytes")
        ax.set_xlabel("op (program order)")
        ax.set_ylabel("live MiB")
        ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def plot_buffers(reports, out, title):
    """One line per (label, act-buffer-peak JSON), peaks marked, x scaled to
    the step's progress (the steps' op counts differ)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(10, 4))
    for label, report in reports:
        function = report["functions"][0]
        mib = [b / 2**20 for b in function["timeline"]]
        x = [i / max(len(mib) - 1, 1) for i in range(len(mib))]
        line, = ax.plot(x, mib, label=f"{label}: peak {function['peak_bytes'] / 2**20:.2f} MiB")
        at = max(range(len(mib)), key=lambda i: mib[i])
        ax.plot([x[at]], [mib[at]], "o", color=line.get_color())
    ax.set_title(title)
    ax.set_xlabel("step progress (ops of the lowered step, forward then backward)")
    ax.set_ylabel("live MiB (the step's own buffers)")
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(out)


def main_buffers(args):
    reports = []
    for spec in args.buffers:
        path, _, label = spec.partition(":")
        try:
            report = json.load(open(path))
            report["functions"][0]["timeline"]
        except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
            print(f"act.memory_plot: error: {path} is not an act-buffer-peak report "
                  f"with a timeline ({type(e).__name__}: {e})", file=sys.stderr)
            return 1
        reports.append((label or os.path.basename(path), report))
    plot_buffers(reports, args.output, args.title or "bytes live over the lowered step")
    for label, report in reports:
        f = report["functions"][0]
        print(f"{label}: peak {f['peak_bytes']} bytes at {f['op']} ({f['location']})")
    print(f"wrote {args.output}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m act.memory_plot", description=__doc__.split("\n\n")[0])
    p.add_argument("report", nargs="?", help="act-memory-report's JSON (json=FILE)")
    p.add_argument("--buffers", nargs="+", metavar="FILE[:LABEL]",
                   help="act-buffer-peak JSON files (act-cpu-pipeline{peak-report=FILE.json})")
    p.add_argument("--title", default="", help="--buffers: the figure's title")
    p.add_argument("-o", "--output", required=True, help="the plot (.svg or .png)")
    args = p.parse_args(argv)
    if args.buffers:
        return main_buffers(args)
    if not args.report:
        p.error("give act-memory-report's JSON or --buffers")
    try:
        report = json.load(open(args.report))
        graphs = report["graphs"]
        for g in graphs:
            g["peak_estimate"]["point_after"]["timeline"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"act.memory_plot: error: {args.report} is not an act memory report "
              f"with a timeline ({type(e).__name__}: {e})", file=sys.stderr)
        return 1
    plot(report, args.output)
    for g in graphs:
        point = g["peak_estimate"]["point_after"]
        print(f"@{g['function']}: peak {g['peak_estimate']['bytes_after']} bytes at "
              f"{point['op']} ({point['location']}); largest live:")
        for buffer in point["live"][:5]:
            print(f"  {buffer['bytes']:>12} bytes  {buffer['what']}")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
