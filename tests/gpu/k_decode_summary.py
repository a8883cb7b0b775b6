# Prints the side-by-side of `bench_cuda_backend --q3k-only`, `--q5k-only` or `--q6k-only`
# (tests/gpu/q3k_pass_on_device.sh, q5k_pass_on_device.sh, q6k_pass_on_device.sh):
# python3 k_decode_summary.py BENCH.json q3k|q5k|q6k.
# Medians of each launch shape on the tensor cores and in the F32 kernels, the diagnosis
# variants, the expert FFN both ways, the read ceilings and, where run, the twin.
import json, statistics, sys
d = json.load(open(sys.argv[1]))
d2d = d["d2d_copy_bytes_per_s"]
print("d2d %.2f TB/s" % (d2d / 1e12))
sect = sys.argv[2]
q = d["gemv_" + sect]
rows = {}
for g in q["launches"]:
    key = (g["type"], "%dx%dx%d" % (g["experts_per_launch"], g["rows"], g["cols"]))
    rows.setdefault(key, {}).setdefault(g["f32_kernels"], []).append(g)
med = lambda gs, k: statistics.median(x[k] for x in gs)
for (t, shape), v in rows.items():
    line = "%-5s %-14s default %7.1f us %.3f of D2D" % (t, shape, med(v[False], "us_per_launch"), med(v[False], "ratio_to_d2d"))
    if True in v:
        line += " | f32 kernels %7.1f us %.3f | x%.2f" % (med(v[True], "us_per_launch"), med(v[True], "ratio_to_d2d"),
                                                        med(v[True], "us_per_launch") / med(v[False], "us_per_launch"))
    print(line)
var = {}
for g in q.get("variants", []):
    var.setdefault("%dx%dx%d" % (g["experts_per_launch"], g["rows"], g["cols"]), []).append(
        "v%d %.1f us %.3f" % (g["mma_variant"], g["us_per_launch"], g["ratio_to_d2d"]))
for shape, v in var.items():
    print("%s %-14s %s" % (sect, shape, " | ".join(v)))
ffn = {}
for g in q.get("expert_ffn", []):
    ffn.setdefault("%s/%s %d x %d on %d" % (g["type"], g.get("down_type", g["type"]), g["experts"], g["inter"], g["hidden"]), {}).setdefault(g["f32_kernels"], []).append(g)
for shape, v in ffn.items():
    a, b = med(v[False], "ffn_us"), med(v[True], "ffn_us")
    print("FFN %-26s tensor cores %7.1f us %.3f (gate+up %.1f, down %.1f) | f32 kernels %7.1f us %.3f | x%.2f" % (
        shape, a, med(v[False], "ratio_to_d2d"), med(v[False], "gate_up_us"), med(v[False], "down_us"),
        b, med(v[True], "ratio_to_d2d"), b / a))
# Q5_K's, Q6_K's and Q3_K's tiled layouts beside the GGUF layout's (--q5k-only, --q6k-only,
# --q3k-only, twenty-ninth pass): plain launches, gate + up with the SwiGLU epilogue, the expert FFN.
# (--q6k-only also "tiled_ffn_q4k_gate_up": Q4_K gate + up tiled, the Q6_K down switched.)
for sec, key, us in (("tiled", "plain", "us_per_launch"), ("tiled_glu", "gate+up", "us_per_launch"),
                     ("tiled_ffn", "FFN", "ffn_us"), ("tiled_ffn_q4k_gate_up", "Q4K+down", "ffn_us")):
    by = {}
    for g in q.get(sec, []):
        is_ffn = sec.startswith("tiled_ffn")
        shape = "%dx%dx%d" % (g["experts"], g["inter"], g["hidden"]) if is_ffn else \
            "%dx%dx%d" % (g["experts_per_launch"], g["rows"], g["cols"])
        by.setdefault(shape, {}).setdefault(g.get("down_tiled", g["tiled"]) if is_ffn else g["tiled"], []).append(g)
    for shape, v in by.items():
        if False in v and True in v:
            a, b = med(v[False], us), med(v[True], us)
            print("tiled %-7s %-14s GGUF %7.1f us %.3f | tiled %7.1f us %.3f | x%.2f" % (
                key, shape, a, med(v[False], "ratio_to_d2d"), b, med(v[True], "ratio_to_d2d"), a / b))
# Q3_K's tiled launches at depth 1 and 2 (--q3k-only, thirtieth pass): plain and gate + up.
dep = {}
for g in q.get("tiled_depth", []):
    shape = "%s %dx%dx%d" % ("gate+up" if g.get("swiglu_epilogue") else "plain  ", g["experts_per_launch"],
                             g["rows"], g["cols"])
    dep.setdefault(shape, {}).setdefault(g["tiled_depth"], []).append(g)
for shape, v in dep.items():
    if 1 in v and 2 in v:
        a, b = med(v[1], "us_per_launch"), med(v[2], "us_per_launch")
        print("tiled depth %-22s depth 1 %7.1f us %.3f | depth 2 %7.1f us %.3f | x%.2f" % (
            shape, a, med(v[1], "ratio_to_d2d"), b, med(v[2], "ratio_to_d2d"), a / b))
for c in q["read_ceiling"]:
    print("read ceiling %-18s %s" % (c["shape"], {k: round(v, 3) for k, v in c.items() if "ratio" in k}))
t = d.get("twin_" + sect)
if t:
    for r in t["rounds"]:
        print("twin f32_kernels=%-5s compute %.3f ms/step wall %.3f ms/step hits %d misses %d checksum %.6g" % (
            r["f32_kernels"], r["compute_ms_per_step"], r["wall_ms_per_step"], r["hits"], r["misses"], r["checksum"]))
    print("twin median compute ms/step: tensor cores %.3f, f32 kernels %.3f" % (
        t["compute_ms_per_step_tensor_cores"], t["compute_ms_per_step_f32_kernels"]))
    for r in t.get("tiled_rounds", []):
        print("twin q3k_tiled=%-5s compute %.3f ms/step hits %d misses %d checksum %r" % (
            r["q3k_tiled"], r["compute_ms_per_step"], r["hits"], r["misses"], r["checksum"]))
    if t.get("tiled_rounds"):
        sums = {r["checksum"] for r in t["tiled_rounds"]}
        print("twin median compute ms/step: Q3_K tiled off %.3f, on %.3f (x%.3f); checksums %s" % (
            t["compute_ms_per_step_q3k_tiled_off"], t["compute_ms_per_step_q3k_tiled_on"],
            t["compute_ms_per_step_q3k_tiled_off"] / t["compute_ms_per_step_q3k_tiled_on"],
            "equal" if len(sums) == 1 else "DIFFER"))
for name, e in d.get("engine", {}).get("k_tensor_cores_of", {}).items():
    print("engine %-40s decode tok/s: F32 kernels %.1f, tensor cores %.1f (x%.3f); prefill %.1f -> %.1f" % (
        name, e["decode_tokens_per_s_off"], e["decode_tokens_per_s_on"], e["decode_speedup"],
        e["prefill_tokens_per_s_off"], e["prefill_tokens_per_s_on"]))
