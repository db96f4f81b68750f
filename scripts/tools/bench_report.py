"""The reporting half of `make bench` (scripts/tools/bench.py measures): the summary rows with their goals, the
Markdown tables of guides/benchmarks.md, the two charts per device, and the summary in guides/performance.md,
all from the results JSON files, so that `python scripts/tools/bench.py --render-only` redraws them without
measuring anything."""

import json

import plots

import ladder  # noqa: F401  (first: puts scripts/ on the path, for common)
from common import metrics
from ladder import ROOT, RUNGS

# per_step_costs' rows
PER_STEP_KINDS = (
    "plain loop",
    "DDP",
    "DDP without buffer broadcast",
    "accelerate",
)


def summary(sections):
    """One row per headline ratio: (measure, value, goal, goal met?). `goal` None: reported, no target."""
    rows = []

    def add(measure, value, goal=None, higher_is_better=False):
        met = None if goal is None else (value >= goal if higher_is_better else value <= goal)
        rows.append({"measure": measure, "value": value, "goal": goal, "goal_met": met})

    s = sections
    # one command measured in two sections of this run
    for task, name in (
        ("digits", "rungs"),
        ("gpt", "gpt"),
    ):
        again = s.get("scaling", {}).get(task, {}).get("one_process_samples_per_second")
        first = s.get("overhead", {}).get(name, {}).get(RUNGS[1], {}).get("samples_per_second")
        if first and again:
            add(
                f"run-to-run spread: rung 1 ({task}) in two sections, faster / slower",
                max(first, again) / min(first, again),
            )
    if "rungs" in s.get("overhead", {}):
        for name, r in s["overhead"]["rungs"].items():
            if name != RUNGS[1]:
                add(
                    f"step time, {name} / rung 1 (world size 1, digits CNN, 2 ms steps)",
                    r["step_time_ratio"],
                    1.03,
                )
        for name, r in s["overhead"].get("gpt", {}).items():
            if name != RUNGS[1]:
                add(
                    f"step time, {name} / rung 1 (world size 1, GPT task)",
                    r["step_time_ratio"],
                    1.03,
                )
    for task in ("digits", "gpt"):
        if task in s.get("input_pipeline", {}):
            add(
                f"input pipeline: loader / preloaded ({task})",
                s["input_pipeline"][task]["ratio"],
                1.05,
            )
    for task in ("digits", "gpt"):
        if task in s.get("scaling", {}):
            add(
                f"2 processes x 1 thread / 1 process x 2 threads, samples/s ({task})",
                s["scaling"][task]["ratio"],
            )
            if "fsdp_over_ddp_step_time" in s["scaling"][task]:
                c = s["scaling"][task]
                add(
                    f"step time, FSDP (rung 7) / DDP (rung 4), 2 processes ({task})",
                    c["fsdp_over_ddp_step_time"],
                )
                mem = c["bytes_per_process"]
                add(
                    f"bytes per process (parameters + gradients + optimizer), FSDP / DDP ({task})",
                    sum(mem["fsdp"].values()) / sum(mem["ddp"].values()),
                    0.55,
                )
    for task in ("digits", "gpt"):
        if task in s.get("accumulation", {}):
            add(
                f"gradient accumulation, 4 micro-batches: all-reduce each / no_sync step time ({task})",
                s["accumulation"][task]["no_sync_speedup"],
                1.0,
                higher_is_better=True,
            )
    if "rows" in s.get("peers", {}):
        peer = s["peers"]["rows"]
        for name in (n for n in ("4_ddp_torchrun", "6_accelerate") if n in peer):
            add(
                f"peers: samples/s, {name} / fastest peer (spread {max(r['spread'] for r in peer.values()):.0%})",
                peer[name]["vs_fastest"],
            )
        add(
            "peers: every fp32 peer ends on rung 1's weights (max |w - w_rung1|)",
            max(r["max_abs_weight_diff_vs_rung1"] for r in peer.values()),
            1e-5,
        )
    for task in ("digits", "gpt"):
        if task in s.get("mixed_precision", {}):
            m = s["mixed_precision"][task]
            add(f"bf16 / fp32 speed-up ({task}, rung 5)", m["bf16_speedup_vs_fp32"])
            if "fp16_speedup_vs_bf16" in m:
                add(
                    f"fp16 + GradScaler / bf16 speed-up ({task}, rung 5)", m["fp16_speedup_vs_bf16"]
                )
    for task in ("digits", "gpt"):
        if task in s.get("checkpoint", {}):
            c = s["checkpoint"][task]
            add(f"checkpoint save / torch.save ({task})", c["save_ratio_vs_torch_save"])
            add(f"checkpoint load / torch.load ({task})", c["load_ratio_vs_torch_load"])
            add(f"checkpoint save / epoch time ({task})", c["share_of_epoch"], 0.05)
    g = s.get("gpu", {})
    if "runs" in g:
        mfu = g["runs"].get("rung5_bf16_compile", {}).get("mfu")
        if mfu is not None:
            add(
                "GPT 12x768, T=1024: MFU, bf16 + compile (rung 5)", mfu, 0.40, higher_is_better=True
            )
        if g.get("bf16_speedup_vs_tf32"):
            add(
                "GPT: bf16 / TF32 speed-up (compiled)",
                g["bf16_speedup_vs_tf32"],
                1.4,
                higher_is_better=True,
            )
        if g.get("rung6_over_rung1_step_time"):
            add(
                "GPT: step time, rung 6 / rung 1 (TF32, compiled)",
                g["rung6_over_rung1_step_time"],
                1.02,
            )
        if g.get("compile_speedup"):
            add("GPT: torch.compile speed-up (rung 1, TF32)", g["compile_speedup"])
    return rows


def _fmt(value):
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if isinstance(value, str):
        return value
    if value != value:
        return "n/a"
    return (
        f"{value:,.0f}"
        if abs(value) >= 1000
        else f"{value:.3g}"
        if abs(value) >= 1e-3 or value == 0
        else f"{value:.1e}"
    )


def _table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def machine_line(result):
    m = result["machine"]
    name = m["device_name"] if m["device"] == "cuda" else f"CPU ({m['cpu_count']} cores)"
    return (
        f"{name}; torch {m['torch']}, Python {m['python']}; {result['created'][:10]}; "
        f"{'quick run (machinery only)' if result['quick'] else 'full run'}, {result['seconds']:.0f} s"
    )


def summary_table(result):
    rows = [(r["measure"], r["value"], r["goal"], r["goal_met"]) for r in result["summary"]]
    return _table(["measure", "value", "goal", "met"], rows)


def markdown(results, img):
    """guides/benchmarks.md from every results JSON (one per device kind)."""
    parts = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`scripts/tools/bench.py`) from `bench/results-*.json`: do not edit by hand. "
        "Every "
        "ratio is of two medians measured side by side in one run, the repeats alternating, each run's "
        "first epoch (warm-up, compilation) left out. Absolute times mean something only on the GPU. The "
        "'run-to-run spread' row is the same rung 1 command measured in two sections of the run: a ratio "
        "closer to 1 than that spread is within the machine's noise (shared 2-core VMs drift by 10-40%).",
        "",
    ]
    for result in results:
        s = result["sections"]
        parts += [f"## {result['machine']['device'].upper()}: {machine_line(result)}", ""]
        if result.get("note"):
            parts += [f"*{result['note']}.*", ""]
        parts += [summary_table(result), ""]
        # run again and measured; kept so a rare crash is seen
        for f in result.get("launch_failures", []):
            parts += [
                f"*A launch of {f['launch']} failed once (exit {f['exit_code']}: `{f['why']}`) and was run "
                f"again; its tail is in bench/results-{result['machine']['device']}.json.*",
                "",
            ]
        if "rungs" in s.get("overhead", {}):
            o = s["overhead"]
            parts += [
                f"### Scaffolding overhead: every rung at world size 1 ({o['task']}, {o['model']}, batch "
                f"{o['batch_size']}, {o['epochs']} epochs x {o['repeats']} repeats)",
                "",
                _table(
                    ["rung", "samples/s", "step time / rung 1", "max abs weight diff vs rung 1"],
                    [
                        (
                            k,
                            v["samples_per_second"],
                            v["step_time_ratio"],
                            v["max_abs_weight_diff_vs_rung1"],
                        )
                        for k, v in o["rungs"].items()
                    ],
                ),
                "",
                *(
                    [
                        "The same on the GPT task (2 layers x 128 wide, T=64, batch 32):",
                        "",
                        _table(
                            ["rung", "samples/s", "step time / rung 1"],
                            [
                                (k, v["samples_per_second"], v["step_time_ratio"])
                                for k, v in o["gpt"].items()
                            ],
                        ),
                        "",
                    ]
                    if o["gpt"]
                    else []
                ),
                "Where the extra time goes (digits CNN, batches in memory, one process, timed in-process):",
                "",
                _table(
                    ["loop", "ms/step", "extra us/step"],
                    [
                        (
                            k,
                            o["per_step_costs"]["ms_per_step"][k],
                            o["per_step_costs"]["extra_us_per_step"][k],
                        )
                        for k in PER_STEP_KINDS
                    ],
                ),
                "",
            ]
        if "digits" in s.get("input_pipeline", {}):
            p = s["input_pipeline"]
            parts += [
                "### Input pipeline: the rungs' loader vs the same batches already on the device",
                "",
                _table(
                    [
                        "task",
                        "ms/step preloaded",
                        "ms/step loader",
                        "ratio",
                        "ratio, 1 worker",
                        "read ms/batch: datasets formatting",
                        "read ms/batch: Columns",
                    ],
                    [
                        (
                            t,
                            p[t]["step_ms"]["preloaded"],
                            p[t]["step_ms"]["loader"],
                            p[t]["ratio"],
                            p[t]["ratio_1_worker"],
                            p[t]["batch_read_ms"]["datasets_formatting"],
                            p[t]["batch_read_ms"]["columns"],
                        )
                        for t in ("digits", "gpt")
                        if t in p
                    ],
                ),
                "",
            ]
        if "digits" in s.get("scaling", {}):
            c = s["scaling"]
            parts += [
                f"### Scaling on this machine: 2 processes x {c['threads']['per_process_of_two']} thread(s) "
                f"vs 1 process x {c['threads']['one_process']} threads, global batch 32",
                "",
                _table(
                    [
                        "task",
                        "1 process samples/s",
                        "2 processes samples/s",
                        "ratio",
                        "gradient bytes",
                        "all-reduce s/step",
                        "all-reduce share of step",
                        "max abs weight diff",
                    ],
                    [
                        (
                            t,
                            c[t]["one_process_samples_per_second"],
                            c[t]["two_processes_samples_per_second"],
                            c[t]["ratio"],
                            4 * c[t]["gradient_numel"],
                            c[t]["allreduce_seconds_per_step"],
                            c[t]["allreduce_share_of_step"],
                            c[t]["max_abs_weight_diff"],
                        )
                        for t in ("digits", "gpt")
                        if t in c
                    ],
                ),
                "",
                "FSDP (rung 7) against DDP (rung 4), both 2 processes, global batch 32: bytes per process",
                "(parameters, gradients, optimizer state) and speed:",
                "",
                _table(
                    [
                        "task",
                        "DDP samples/s",
                        "FSDP samples/s",
                        "FSDP / DDP step time",
                        "DDP bytes",
                        "FSDP bytes",
                        "FSDP max abs weight diff vs 1 process",
                    ],
                    [
                        (
                            t,
                            c[t]["two_processes_samples_per_second"],
                            c[t]["fsdp_samples_per_second"],
                            c[t]["fsdp_over_ddp_step_time"],
                            sum(c[t]["bytes_per_process"]["ddp"].values()),
                            sum(c[t]["bytes_per_process"]["fsdp"].values()),
                            c[t]["fsdp_max_abs_weight_diff_vs_one_process"],
                        )
                        for t in ("digits", "gpt")
                        if t in c and "fsdp_samples_per_second" in c[t]
                    ],
                ),
                "",
                "gloo all_reduce between 2 processes (float32; bus bandwidth = 2(n-1)/n x bytes / time):",
                "",
                _table(
                    ["bytes", "seconds", "bus bandwidth GB/s"],
                    [
                        (v["bytes"], v["seconds"], v["bus_bandwidth_GBps"])
                        for v in sorted(
                            c["allreduce_2_processes"].values(), key=lambda v: v["bytes"]
                        )
                    ],
                ),
                "",
            ]
        if "digits" in s.get("accumulation", {}):
            a = s["accumulation"]
            parts += [
                f"### Gradient accumulation under DDP: {a['processes']} processes, {a['micro_batches']} "
                f"micro-batches of {a['micro_batch_size']} per step",
                "",
                "The rungs skip DDP's all-reduce on all but the last micro-batch (`model.no_sync()`; "
                "accelerate's `accumulate()`); without it every micro-batch's backward all-reduces "
                "(pytorch/pytorch#43201). Same gradients either way; seconds per optimizer step:",
                "",
                _table(
                    [
                        "task",
                        "no_sync s/step",
                        "all-reduce every micro-step s/step",
                        "speed-up",
                        "max abs gradient diff",
                        "spread (no_sync, every)",
                    ],
                    [
                        (
                            t,
                            a[t]["seconds_per_step"]["no_sync"],
                            a[t]["seconds_per_step"]["every_micro_step"],
                            a[t]["no_sync_speedup"],
                            a[t]["max_abs_grad_diff"],
                            f"{a[t]['spread']['no_sync']:.0%}, {a[t]['spread']['every_micro_step']:.0%}",
                        )
                        for t in ("digits", "gpt")
                        if t in a
                    ],
                ),
                "",
            ]
        if "rows" in s.get("peers", {}):
            pe = s["peers"]
            parts += [
                f"### Peers: what a user would pick instead ({pe['task']}, {pe['model']}, global batch "
                f"{pe['global_batch_size']}, {pe['world_size']} process(es), {pe['epochs']} epochs x "
                f"{pe['repeats']} repeats, alternated)",
                "",
                "Each launched as its users launch it (torchrun, or accelerate launch); the peers read batches "
                "through the same loader as the rungs, so the rows compare training loops. In-loop samples/s "
                "leaves out the first epoch; launch seconds are everything a user waits for (start-up, data, "
                "eval, checkpoints). Spread: (max - min) / median over the repeats of one contender.",
                "",
                _table(
                    [
                        "contender",
                        "samples/s",
                        "vs fastest",
                        "spread",
                        "launch s",
                        "launch vs quickest",
                        "max abs weight diff vs rung 1",
                    ],
                    [
                        (
                            k,
                            v["samples_per_second"],
                            v["vs_fastest"],
                            f"{v['spread']:.0%}",
                            v["launch_seconds"],
                            v["launch_vs_quickest"],
                            v["max_abs_weight_diff_vs_rung1"],
                        )
                        for k, v in pe["rows"].items()
                    ],
                ),
                "",
                "The ladder's extras (eval, per-epoch checkpoints, the stop flag, the loss all-reduce) against "
                "the minimal loop, as ratios of step time and of launch time:",
                "",
                _table(
                    ["rung", "step time / minimal", "launch time / minimal"],
                    [(k, v["step_time"], v["launch_time"]) for k, v in pe["extras_cost"].items()],
                ),
                "",
            ]
        if s.get("mixed_precision"):
            m = s["mixed_precision"]
            rows = [
                (
                    t,
                    p,
                    m[t]["samples_per_second"][p],
                    m[t]["samples_per_second"][p] / m[t]["samples_per_second"]["no"],
                    m[t]["final_train_loss"][p],
                    m[t]["max_abs_weight_diff_vs_fp32"][p],
                )
                for t in m
                for p in m[t]["samples_per_second"]
            ]
            parts += [
                "### Mixed precision: rung 5 at world size 1",
                "",
                _table(
                    [
                        "task",
                        "precision",
                        "samples/s",
                        "speed-up vs fp32",
                        "final train loss",
                        "max abs weight diff vs fp32",
                    ],
                    rows,
                ),
                "",
            ]
        if "digits" in s.get("checkpoint", {}):
            k = s["checkpoint"]
            parts += [
                "### Checkpoints: `common/checkpoint` (safetensors + sha256 + fsync + atomic rename) vs "
                "`torch.save`",
                "",
                _table(
                    [
                        "task",
                        "bytes",
                        "save s",
                        "torch.save s",
                        "torch.save+fsync s",
                        "load s",
                        "torch.load s",
                        "epoch s",
                        "save / epoch",
                    ],
                    [
                        (
                            t,
                            k[t]["checkpoint_bytes"],
                            k[t]["save_seconds"]["checkpoint.save"],
                            k[t]["save_seconds"]["torch.save"],
                            k[t]["save_seconds"]["torch.save+fsync"],
                            k[t]["load_seconds"]["checkpoint.load"],
                            k[t]["load_seconds"]["torch.load"],
                            k[t]["epoch_seconds"],
                            k[t]["share_of_epoch"],
                        )
                        for t in ("digits", "gpt")
                        if t in k
                    ],
                ),
                "",
            ]
        if "runs" in s.get("gpu", {}):
            g = s["gpu"]
            parts += [
                f"### GPU: GPT {g['parameters'] / 1e6:.0f}M parameters (12 x 768, T=1024, batch "
                f"{g['batch_size']}), peak {(g['peak_bf16_flops'] or 0) / 1e12:.0f} TFLOP/s dense bf16",
                "",
                _table(
                    ["run", "tokens/s", "MFU", "first epoch s (compiling)", "final train loss"],
                    [
                        (
                            k,
                            v["tokens_per_second"],
                            v["mfu"],
                            v["first_epoch_seconds"],
                            v["train_loss"],
                        )
                        for k, v in g["runs"].items()
                    ],
                ),
                "",
            ]
        device = result["machine"]["device"]
        for png, caption in (
            (f"bench-throughput-{device}.png", "throughput per rung and world size"),
            (f"bench-loss-{device}.png", "loss curves of every run, overlaid"),
        ):
            if (img / png).exists():
                parts += [f"![{caption}](img/{png})", ""]
    return "\n".join(parts)


def draw(result, img):
    """The throughput bars and the overlaid loss curves of one results JSON."""
    s, device = result["sections"], result["machine"]["device"]
    bars, curves = [], {}
    if "rungs" in s.get("overhead", {}):
        for name, r in s["overhead"]["rungs"].items():
            bars.append((f"{name}, 1 process", r["samples_per_second"]))
            curves[f"{name}, 1 process"] = r["loss_curve"]
    if "digits" in s.get("scaling", {}):
        c = s["scaling"]["digits"]
        bars.append(("4_ddp_torchrun, 2 processes", c["two_processes_samples_per_second"]))
        curves["4_ddp_torchrun, 2 processes"] = c["loss_curves"]["two_processes"]
    if "digits" in s.get("mixed_precision", {}):
        m = s["mixed_precision"]["digits"]
        for p in ("bf16", "fp16"):
            if p in m["samples_per_second"]:
                bars.append((f"5_ddp_amp {p}, 1 process", m["samples_per_second"][p]))
                curves[f"5_ddp_amp {p}, 1 process"] = m["loss_curves"][p]
    made = []
    if bars:
        path = img / f"bench-throughput-{device}.png"
        where = (
            result["machine"]["device_name"]
            if device == "cuda"
            else f"{result['machine']['cpu_count']} CPU cores"
        )
        plots.bar_chart(
            path,
            bars,
            f"digits CNN, global batch 32, samples/s: {where}",
            "samples per second (higher is better)",
        )
        made.append(path)
    if curves:
        path = img / f"bench-loss-{device}.png"
        plots.line_chart(
            path,
            {k: v for k, v in curves.items() if v},
            "digits CNN: train loss per epoch, every run "
            "(the fp32 runs at one process lie on one line)",
            "optimizer step",
            "train loss (log scale)",
            log_y=True,
        )
        made.append(path)
    return made


README_START, README_END = "<!-- bench: start -->", "<!-- bench: end -->"


def update_readme(results):
    """The summary block of guides/performance.md (between the bench markers), from the results."""
    readme = ROOT / "guides" / "performance.md"
    text = readme.read_text()
    if README_START not in text:
        return False
    block = [README_START, ""]
    for result in results:
        block += [f"**{machine_line(result)}**", ""]
        if result.get("note"):
            block += [f"*{result['note']}.*", ""]
        block += [summary_table(result), ""]
        if (
            ROOT / "guides" / "img" / f"bench-throughput-{result['machine']['device']}.png"
        ).exists():
            block += [
                f"![throughput](img/bench-throughput-{result['machine']['device']}.png)",
                "",
            ]
    block.append(README_END)
    head, rest = text.split(README_START, 1)
    readme.write_text(head + "\n".join(block) + rest.split(README_END, 1)[1])
    return True


def render(out):
    """benchmarks.md, the plots and (for guides/) the performance summary, from every results JSON."""
    files = sorted((out / "bench").glob("results-*.json"))
    results = [json.loads(f.read_text()) for f in files]
    for f, r in zip(files, results):
        r["summary"] = summary(r["sections"])  # the rows as this version of the script defines them
        metrics.write_json(f, r)
        draw(r, out / "img")
    (out / "benchmarks.md").write_text(markdown(results, out / "img") + "\n")
    if out.resolve() == (ROOT / "guides").resolve():
        update_readme(results)
