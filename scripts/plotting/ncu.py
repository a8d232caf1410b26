"""Loading the profiler's CSVs (`ncu --csv --page raw`, written by scripts/profile.sh) and naming
their kernels briefly. No matplotlib here."""
import csv
import re

from . import DataError

TYPE_NAMES = {"float": "f32", "__half": "f16", "__nv_bfloat16": "bf16"}


def short_kernel_name(full):
    """'void softmax_warp_kernel<float, ...>(...)' -> 'softmax_warp_kernel<f32>'; CUB keeps its op."""
    name = full.replace("void ", "").replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
    name = name.replace("course::", "").replace("detail::", "")
    base = name.split("(")[0]
    head = base.split("<")[0]
    if head.endswith("elementwise_kernel"):  # chapter 11: <pack, unroll, [loop,] factory, out, in...>
        m = re.match(r"[\w:]*elementwise_kernel<(\d+), (\d+), (?:(true|false|[01]), )?(?:ew::)?(?:SimpleFactory<)?(?:ew::)?(\w+)<(\w+)>", base)
        if m:
            loop = ", loop" if m[3] in ("true", "1") else ""
            return f"elementwise_kernel<pack {m[1]}, unroll {m[2]}{loop}> {m[4]}<{TYPE_NAMES.get(m[5], m[5])}>"
    # chapters 12-14: <cache, Load<T>, Store<T>, pack, block...>: name the storage. Nsight Compute
    # names the kernel with its namespace (ch12::, ch13::, ch14::) or, on some runs, without it.
    if re.match(r"ch1[234]::", head) or re.match(r"softmax_\w+<(\w+, )?\w+Load<", base):
        head = re.sub(r"^ch1[234]::", "", head)
        loads = re.findall(r"(\w+Load)<(\w+)>", base)
        nums = re.findall(r"(?<=[<,] )(\d+)|(?<=<)(\d+)", base.split(">", 1)[-1])
        cache = base.split("<", 1)[1].split(",")[0].strip() if head.startswith("softmax_smem") else None
        parts = [f"{loads[0][0]}<{TYPE_NAMES.get(loads[0][1], loads[0][1])}>"] if loads else []
        targs = base.split("<", 1)[1].rsplit(">", 1)[0] if "<" in base else ""
        first = targs.split(",")[0].strip()
        if not loads and first in TYPE_NAMES:  # the tile kernels: <T, [Store<T>,] numbers>
            flat = targs
            while re.search(r"<[^<>]*>", flat):
                flat = re.sub(r"<[^<>]*>", "", flat)
            parts = [TYPE_NAMES[first]]
            nums = [(a.strip(), "") for a in flat.split(",")[1:] if a.strip().isdigit()]
        if cache:
            parts.append(f"cache {TYPE_NAMES.get(cache, cache)}")
        parts += [n for pair in nums for n in pair if n]
        return f"{head}<{', '.join(parts)}>"
    if head.startswith("cub::"):
        op = "max" if "Max>" in base else "sum" if "plus" in base else ""
        return f"{head} ({op})" if op else head
    if "<" in base:
        targs = base[len(head) + 1:].rsplit(">", 1)[0]
        if len(targs) <= 40:  # short argument lists in full: <f16, 8, 128, 2>
            return f"{head}<{', '.join(TYPE_NAMES.get(a.strip(), a.strip()) for a in targs.split(','))}>"
        first = targs.split(",")[0].split(">")[0].strip()
        return f"{head}<{TYPE_NAMES.get(first, first)}>"
    return head


def load_profile(path):
    """The first launch of each kernel in an ncu --csv --page raw file, harness kernels left out:
    (kernels, shape match, how line)."""
    with open(path) as f:
        text = f.read()
    shape = re.search(r"^# shape: rows=(\d+) cols=(\d+)", text, re.M)
    how = re.search(r"^# how: (.+)$", text, re.M)  # how ncu ran, where not by scripts/profile.sh
    # what each profiled run was, in order, where one kernel was run several ways (the balance marker)
    labels = re.search(r"^# launches: (.+)$", text, re.M)
    labels = [x.strip() for x in labels[1].split(";")] if labels else []
    elements = int(shape[1]) * int(shape[2]) if shape else None
    rows = list(csv.reader([l for l in text.splitlines() if l.startswith('"')]))
    if len(rows) < 3:
        raise DataError(f"{path}: no kernel rows")
    head = rows[0]
    col = {h: i for i, h in enumerate(head)}

    def num(r, key):
        v = r[col[key]].replace(",", "") if key in col else ""
        return float(v) if v not in ("", "n/a") else float("nan")

    seen, out, run = set(), [], 0
    for r in rows[1:]:
        if r and r[0] == "ID":  # the header of the next profiled run (another dtype)
            run += 1
        if not r or not r[0].isdigit():  # the units row, or a repeated header
            continue
        full = r[col["Kernel Name"]]
        if "fill_kernel" in full or (run, full) in seen:
            continue
        seen.add((run, full))
        out.append({
            "kernel": short_kernel_name(full),
            "label": labels[len(out)] if len(out) < len(labels) else None,
            "us": num(r, "gpu__time_duration.sum") / 1e3,
            "read_mb": num(r, "dram__bytes_read.sum") / 1e6,
            "write_mb": num(r, "dram__bytes_write.sum") / 1e6,
            "dram_pct": num(r, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
            "occupancy": num(r, "sm__warps_active.avg.pct_of_peak_sustained_active"),
            "regs": num(r, "launch__registers_per_thread"),
            "grid": num(r, "launch__grid_size"),
            "block": num(r, "launch__block_size"),
            "local_b": num(r, "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum"),
            "inst_m": num(r, "smsp__inst_executed.sum") / 1e6,
            "ldst_per_elem": (num(r, "smsp__sass_inst_executed_op_global_ld.sum")
                              + num(r, "smsp__sass_inst_executed_op_global_st.sum")) * 32 / elements
                             if elements else float("nan"),
            "inst_per_elem": num(r, "smsp__inst_executed.sum") * 32 / elements if elements else float("nan"),
            "conflicts": num(r, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum")
                         + num(r, "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"),
            # The memory pipeline, where a profile has it (the sectors marker): requests are warp
            # instructions at L1, sectors the 32-byte pieces they touch; lts__ counts what L1 sends to L2.
            "ld_req": num(r, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"),
            "ld_sec": num(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
            "st_req": num(r, "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"),
            "st_sec": num(r, "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
            "l2_rd_sec": num(r, "lts__t_sectors_srcunit_tex_op_read.sum"),
            "l2_wr_sec": num(r, "lts__t_sectors_srcunit_tex_op_write.sum"),
            # How evenly the SMs were kept busy, where a profile has it (the balance marker).
            "cyc_min": num(r, "sm__cycles_active.min"),
            "cyc_avg": num(r, "sm__cycles_active.avg"),
            "cyc_max": num(r, "sm__cycles_active.max"),
        })
    return out, shape, how[1].strip() if how else None

