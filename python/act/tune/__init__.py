"""act-tune: measure sensitivities, allocate bits, recompile, check.

    act-tune MODEL | MANIFEST.json [--average-bits 4] [--batch N] [--batches K]
             [--measure-bits 4] [--variance-runs R] [-o DIR]

MODEL is exported first (act.export); MANIFEST.json is an existing export.
Then, on the joint form:
1. compile: `act-insert-encode-decode` with `#act.quant<bits = measure-bits>`
   on every candidate tensor (loss head included);
2. estimate: act-run --sensitivity's estimator over K mini-batches (GACT
   Alg. 1, L + 1 step evaluations per batch) -> DIR/profile.json; with
   --few-bit B, also act-run --fewbit-sensitivity's on the graph without
   encodings (the
   gradient error of B-bit few-bit codes of each value the backward reads
   only through an activation's derivative) -> DIR/profile_fewbit.json;
   with --division B, #act.division's sensitivities -> profile_division.json;
3. allocate: `act-allocate-bits` (exact, and greedy for comparison) ->
   DIR/tuned.mlir, DIR/tuned_greedy.mlir;
4. check: the gradient's variance over R step seeds on one batch (the
   compression variance) for the tuned, greedy and uniform allocations of
   the same budget, next to the variance the profile predicts (with
   --few-bit: the mean squared error against the step without encodings,
   act-run --reference, since few-bit codes add a bias, not a variance).
Every step runs in this process, through the C API (no act-run, no act-opt).
Writes DIR/tune_report.json, DIR/tune_report.md and DIR/sensitivity.svg
(per-tensor sensitivity and allocated bits, as GACT's Fig. 3a).
"""

import json
import os

from .. import capi, driver

# act-run's default --step-seed: the same measurements as act-run's.
STEP_SEED = 1


def measured_variance(mlir, manifest, runs, reference=None):
    """The compression variance of `mlir` over `runs` step seeds on the
    export's batch; with a `reference` (the graph without encodings), the
    mean squared error of the gradient against it instead (variance plus
    squared bias: what few-bit codes' cost predicts). In process (the C
    API), with act-run's default step seed."""
    step = capi.CompiledStep.from_file(mlir)
    exact = capi.CompiledStep.from_file(reference) if reference else None
    variance, _, error = step.measure_variance(driver.arguments(manifest["inputs"])[0], runs,
                                               seed=STEP_SEED, reference=exact)
    return error if reference else variance


def plot(profile, allocation, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tensors = allocation["tensors"]
    ids = [t["id"] for t in tensors]
    sens = [t["sensitivity"] if t["sensitivity"] is not None else float("nan") for t in tensors]
    bits = [t["bits"] for t in tensors]
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(ids) + 2), 3.6))
    x = range(len(ids))
    ax.bar(x, sens, color="tab:blue", label="sensitivity $c_l$")
    ax.set_yscale("log")
    ax.set_ylabel("sensitivity $c_l$")
    ax.set_xlabel("saved tensor id")
    ax.set_xticks(list(x))
    ax.set_xticklabels([str(i) for i in ids], fontsize=7, rotation=90 if len(ids) > 20 else 0)
    ax2 = ax.twinx()
    ax2.plot(list(x), bits, "o-", color="tab:red", label="allocated bits")
    ax2.set_ylabel("bits / element")
    ax2.set_yscale("log", base=2)
    ax2.set_ylim(0.8, 45)
    ax2.set_yticks([1, 2, 4, 8, 32])
    ax2.set_yticklabels(["1", "2", "4", "8", "32"])
    ax.set_title(title, fontsize=9)
    fig.legend(loc="upper left", bbox_to_anchor=(0.0, 1.0), bbox_transform=ax.transAxes, fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def measuring_step(joint, path, measure_bits=4, min_bytes=1024, loss_head=False,
                   encoding=None, recompute_cost=0, loss_head_encoding=None):
    """The joint step `joint` with every saved tensor of at least min_bytes
    under a uniform stochastic `encoding` (default #act.quant<bits =
    measure_bits>; the loss head too with loss_head), written to `path`:
    the step GACT's sensitivities are measured on; recompute_cost: what the
    allocation will recompute is recomputed here too (from the quantized
    values it reads), so that a stored tensor's sensitivity includes it;
    loss_head_encoding: the loss head's encoding (act-insert-encode-decode's
    loss-head), as the allocation will place it."""
    encoding = encoding or f"#act.quant<bits={measure_bits}>"
    return driver.insert(joint, path, f"encoding={driver.option_value(encoding)} "
                         f"encode-loss-head={int(loss_head)} min-bytes={min_bytes}"
                         + driver.placement_options(recompute_cost, loss_head_encoding))


def profile_table(path, title):
    """A sensitivity profile (docs/Profile.md) as the table act-run prints."""
    with open(path) as f:
        profile = json.load(f)
    m = profile["measurement"]
    lines = [f"{title} of @{profile['graph']['function']}: {len(profile['tensors'])} tensors, "
             f"{m['batches']} mini-batch(es), {m['evaluations']} step evaluations "
             f"({m.get('estimator', 'variance')})",
             f"{'id':>6} {'elements':>10} {'bits':>5} {'sensitivity':>14}"]
    lines += [f"{t['id']:>6} {t['elements']:>10} {t['bits']:>5} {t['sensitivity']:>14.6e}"
              for t in profile["tensors"]]
    if profile.get("gradient_variance") is not None:
        lines.append(f"gradient variance over {m['batches']} mini-batches: "
                     f"{profile['gradient_variance']:.6e}")
    lines.append(f"profile: {path}")
    return "\n".join(lines)


def measure(joint, inputs, batches, profile_path, measure_bits=4, min_bytes=1024,
            loss_head=False, encoding=None):
    """GACT's sensitivities of the joint step `joint` (its measuring_step),
    measured in process (the C API; act-run --sensitivity's estimator and
    step seed) on the mini-batch `inputs` (.npy paths) and the extra
    `batches` into profile_path. Returns the profile as a table."""
    measured = measuring_step(joint, os.path.splitext(profile_path)[0] + "_measure.mlir",
                              measure_bits, min_bytes, loss_head, encoding)
    step = capi.CompiledStep.from_file(measured)
    step.estimate_sensitivity(driver.arguments(inputs, batches), profile_path, seed=STEP_SEED)
    return profile_table(profile_path, "sensitivity")


def measure_fewbit(joint, inputs, batches, profile_path, bits=2):
    """Few-bit codes' gradient error on the graph `joint` without encodings
    (act-run --fewbit-sensitivity's estimator at `bits` bits, in process)
    into profile_path, the #act.fewbit family of act-allocate-bits. Returns
    the profile as a table."""
    step = capi.CompiledStep.from_file(joint)
    step.estimate_fewbit_sensitivity(driver.arguments(inputs, batches), profile_path, bits)
    return profile_table(profile_path, "few-bit sensitivity")


def allocate(joint, profile_path, average_bits, mlir, report, solver="exact", min_bytes=1024,
             runtime_bits=False, recompute_cost=0, loss_head=None, bits=None, stats="f32"):
    """act-allocate-bits on `joint` for the average budget, written to
    `mlir`, in this process (driver.passes); `profile_path` is one profile
    or a list (one per encoding family); runtime_bits: #act.runtime_quant
    where the choice is #act.quant or f32 (the report's "runtime"
    tensors); recompute_cost: act-allocate-bits' recompute-cost (the
    report's "recomputed" ids, at 0 bits in the budget); loss_head: the
    loss head's encoding (act-allocate-bits' loss-head); bits: the
    allowed widths (act-allocate-bits' bits; [w], where w bits on every
    tensor fit the budget, places uniform bits); stats: how the chosen
    #act.quant store their group statistics (act-allocate-bits' stats: f32
    or bf16); returns (its table, the report's JSON)."""
    paths = [profile_path] if isinstance(profile_path, str) else list(profile_path)
    table = os.path.splitext(report)[0] + ".txt"
    driver.passes(joint, mlir, "act-allocate-bits", " ".join([
        f"profile={','.join(map(driver.option_value, paths))}",
        f"average-bits={average_bits}", f"solver={solver}",
        f"report={driver.option_value(report)}", f"table={driver.option_value(table)}",
        f"min-bytes={min_bytes}"] + (["runtime-bits=1"] if runtime_bits else [])
        + ([f"bits={','.join(map(str, bits))}"] if bits else [])
        + ([f"stats={stats}"] if stats != "f32" else []))
        + driver.placement_options(recompute_cost, loss_head))
    with open(table) as f:
        text = f.read().rstrip()
    with open(report) as f:
        return text, json.load(f)


def tune(manifest, out, average_bits=4.0, measure_bits=4, variance_runs=16, min_bytes=1024,
         quiet=False, division=None, few_bit=None):
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    os.makedirs(out, exist_ok=True)
    joint = manifest["files"]["joint"]
    model = manifest["model"]

    # 1.-2. compile with a uniform stochastic quantizer and estimate.
    profile_path = os.path.join(out, "profile.json")
    say(measure(joint, manifest["inputs"], manifest.get("batches", []), profile_path,
                measure_bits, min_bytes, loss_head=True))
    with open(profile_path) as f:
        profile = json.load(f)
    profiles = [profile_path]
    if division:
        # DIVISION as a second family: its own sensitivities (spatial maps).
        profiles.append(os.path.join(out, "profile_division.json"))
        say(measure(joint, manifest["inputs"], manifest.get("batches", []), profiles[-1],
                    measure_bits, min_bytes,
                    encoding=f"#act.division<block={division}, bits={measure_bits}>"))

    if few_bit:
        # Few-bit codes as another family: their gradient error (a bias).
        profiles.append(os.path.join(out, "profile_fewbit.json"))
        say(measure_fewbit(joint, manifest["inputs"], manifest.get("batches", []), profiles[-1],
                           few_bit))

    # 3. allocate (exact, then greedy for comparison) and recompile.
    results = {}
    for solver in ("exact", "greedy"):
        mlir = os.path.join(out, "tuned.mlir" if solver == "exact" else "tuned_greedy.mlir")
        table, allocation = allocate(joint, profiles, average_bits, mlir,
                                     os.path.join(out, f"allocation_{solver}.json"), solver,
                                     min_bytes)
        if solver == "exact":
            say(table)
        results[solver] = {"mlir": mlir, "allocation": allocation}
    allocation = results["exact"]["allocation"]

    # The uniform allocation of the same budget over the same tensors.
    # (#act.quant's sensitivities: the allocation's are the chosen family's.)
    quant_sens = {t["id"]: t["sensitivity"] for t in profile["tensors"]}
    sens = {t["id"]: quant_sens.get(t["id"], t["sensitivity"]) for t in allocation["tensors"]}
    s = lambda b: 0.0 if b >= 32 else 1.0 / (2 ** b - 1) ** 2
    uniform_bits = int(average_bits)
    rows = []
    uniform_ok = uniform_bits in (1, 2, 4, 8) and uniform_bits == average_bits
    if uniform_ok:
        ids = ",".join(str(i) for i in sens)
        uniform = driver.insert(joint, os.path.join(out, "uniform.mlir"),
                                f"encoding=#act.quant<bits={uniform_bits}> encode-loss-head=1 "
                                f"min-bytes=0 include={ids}")
        rows.append(("uniform", uniform, sum(c * s(uniform_bits) for c in sens.values() if c)))
    rows.append(("exact", results["exact"]["mlir"], results["exact"]["allocation"]["exact"]["objective"]))
    rows.append(("greedy", results["greedy"]["mlir"], results["greedy"]["allocation"]["greedy"]["objective"]))

    # 4. check: measured compression variance against the prediction.
    table = []
    for name, mlir, predicted in rows:
        measured_v = measured_variance(mlir, manifest, variance_runs,
                                       joint if few_bit else None)
        table.append({"allocation": name, "predicted": predicted, "measured": measured_v,
                      "ratio": predicted / measured_v if measured_v > 0 else None})
    report = {
        "model": model, "average_bits": average_bits, "measure_bits": measure_bits,
        "division": division, "few_bit": few_bit,
        "variance_runs": variance_runs, "profile": profile_path,
        "gradient_variance": profile["gradient_variance"],
        "evaluations": profile["measurement"]["evaluations"],
        "tensors": len(allocation["tensors"]),
        "measured_tensors": sum(t["sensitivity"] is not None for t in allocation["tensors"]),
        "sign_only_tensors": sum(bool(t.get("sign_only")) for t in allocation["tensors"]),
        "exact_objective": allocation["exact"]["objective"],
        "greedy_objective": allocation["greedy"]["objective"],
        "variance": table,
        "allocation": allocation["tensors"],
    }
    with open(os.path.join(out, "tune_report.json"), "w") as f:
        json.dump(report, f, indent=2)
    lines = [f"# act-tune: {model}, average {average_bits:g} bits", "",
             f"{len(allocation['tensors'])} tensors, {profile['measurement']['batches']} mini-batches, "
             f"{profile['measurement']['evaluations']} step evaluations; gradient variance "
             f"{profile['gradient_variance']}", "",
             ("| allocation | predicted error (variance + bias^2) | measured mean squared "
              "error | predicted / measured |") if few_bit else
             "| allocation | predicted variance | measured variance | predicted / measured |",
             "|---|---|---|---|"]
    for row in table:
        lines.append(f"| {row['allocation']} | {row['predicted']:.4g} | {row['measured']:.4g} | "
                     f"{row['ratio']:.3f} |" if row["ratio"] is not None else
                     f"| {row['allocation']} | {row['predicted']:.4g} | {row['measured']:.4g} | - |")
    lines += ["", "| id | elements | sensitivity | bits (exact) | bits (greedy) |", "|---|---|---|---|---|"]
    for t in allocation["tensors"]:
        c = f"{t['sensitivity']:.4g}" if t["sensitivity"] is not None else (
            "sign only (1-bit mask)" if t.get("sign_only") else "-")
        family = lambda key: next((f + " " for f in ("division", "fewbit")
                                   if f"#act.{f}" in t.get(key, "")), "")
        lines.append(f"| {t['id']} | {t['elements']} | {c} | {family('encoding_exact')}"
                     f"{t['bits_exact']} | {family('encoding_greedy')}{t['bits_greedy']} |")
    with open(os.path.join(out, "tune_report.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    plot(profile, allocation, os.path.join(out, "sensitivity.svg"),
         f"{model}: sensitivity and bits at {average_bits:g} bits on average")
    say("\n".join(lines[4:4 + 2 + len(table)]))
    say(f"act-tune: wrote {out}/tuned.mlir, profile.json, tune_report.md, sensitivity.svg")
    return report
