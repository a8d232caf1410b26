"""The profiler tables: profile (the chapter's Nsight Compute table), sectors (the memory
pipeline) and balance (how evenly the SMs were kept busy), from ncu.load_profile. No matplotlib."""
from . import REFERENCE_GPU, DataError


def ncu_table(columns, rows, shape, how, note, rel_path, gpu=REFERENCE_GPU):
    """A Markdown table of profiled kernels (`columns` after the first, `kernel`; `rows` of cells) with
    its caption: how Nsight Compute ran, the shape, `note` and the data file."""
    lines = ["| kernel | " + " | ".join(columns) + " |", "|---|" + "---:|" * len(columns)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    where = f"{shape[1]} x {shape[2]}" if shape else "the recorded shape"
    lines += ["", f"Nsight Compute ({how}), {where}, first launch of each kernel{note} "
                  f"Data: `plots/data/{gpu}/{rel_path}.ncu.csv`."]
    return "\n".join(lines)


def fmt_profile(prof, chapter, gpu=REFERENCE_GPU):
    kernels, shape, how = prof
    count = lambda v: "-" if v != v else f"{v:.0f}"  # a metric the profile did not collect
    columns = ["blocks x threads", "time (us)", "DRAM read (MB)", "DRAM write (MB)", "DRAM throughput (% of peak)",
               "achieved occupancy (%)", "registers / thread", "local loads (B)", "thread instructions / element",
               "global load+store instructions x 32 / element", "shared bank conflicts"]
    rows = []
    for k in kernels:
        launch = f"{k['grid']:.0f} x {k['block']:.0f}" if k["grid"] == k["grid"] and k["block"] == k["block"] else "?"
        rows.append([f"`{k['kernel']}`", launch, f"{k['us']:.1f}", f"{k['read_mb']:.1f}", f"{k['write_mb']:.1f}",
                     f"{k['dram_pct']:.1f}", f"{k['occupancy']:.1f}", f"{k['regs']:.0f}", f"{k['local_b']:.0f}",
                     f"{k['inst_per_elem']:.1f}", f"{k['ldst_per_elem']:.2f}", count(k['conflicts'])])
    return ncu_table(columns, rows, shape, how or "`scripts/profile.sh`, clocks not locked",
                     "; the profiler counts instructions per warp: both instruction columns are that count x 32 over the elements, so 1.0 is one instruction per element.",
                     chapter, gpu)


def fmt_sectors(prof, rel_path, gpu=REFERENCE_GPU):
    """Markdown table of the memory pipeline of each kernel of a profile with the sector metrics:
    how many 32-byte sectors each global load and store instruction touches at L1, and what L1
    passes on to L2 and L2 to DRAM."""
    kernels, shape, _ = prof
    need = ("ld_req", "ld_sec", "st_req", "st_sec", "l2_rd_sec", "l2_wr_sec")
    if any(k[m] != k[m] for k in kernels for m in need):
        raise DataError(f"{rel_path}: the sectors table needs the l1tex__t_requests/sectors and lts__t_sectors metrics")
    columns = ["time (us)", "global loads: requests (M)", "sectors / request", "global stores: requests (M)",
               "sectors / request", "L1 to L2: sectors read (M)", "sectors written (M)", "DRAM read (MB)",
               "DRAM write (MB)"]
    rows = [[f"`{k['kernel']}`", f"{k['us']:.1f}", f"{k['ld_req'] / 1e6:.2f}", f"{k['ld_sec'] / k['ld_req']:.0f}",
             f"{k['st_req'] / 1e6:.2f}", f"{k['st_sec'] / k['st_req']:.0f}", f"{k['l2_rd_sec'] / 1e6:.2f}",
             f"{k['l2_wr_sec'] / 1e6:.2f}", f"{k['read_mb']:.1f}", f"{k['write_mb']:.1f}"] for k in kernels]
    return ncu_table(columns, rows, shape, "clocks not locked, its own cache control: L2 clean before each launch",
                     ". A warp's 16-byte accesses to 512 contiguous bytes touch 16 sectors.", rel_path, gpu)


def fmt_balance(prof, rel_path, gpu=REFERENCE_GPU):
    """Markdown table of how evenly each profiled launch kept the SMs busy: the cycles the least
    and the most busy SM were active, beside the launch, registers, occupancy and time. For one
    kernel run several ways: the file's `# launches:` line names each run."""
    kernels, shape, how = prof
    need = ("cyc_min", "cyc_avg", "cyc_max")
    if any(k[m] != k[m] for k in kernels for m in need) or any(not k["label"] for k in kernels):
        raise DataError(f"{rel_path}: the balance table needs the sm__cycles_active metrics and a '# launches:' line")
    columns = ["launch", "blocks x threads", "registers / thread", "achieved occupancy (%)", "time (us)",
               "DRAM throughput (% of peak)", "SM active cycles: least busy SM (k)", "mean (k)",
               "most busy SM (k)"]
    rows = [[f"`{k['kernel']}`", k["label"], f"{k['grid']:.0f} x {k['block']:.0f}", f"{k['regs']:.0f}",
             f"{k['occupancy']:.1f}", f"{k['us']:.1f}", f"{k['dram_pct']:.1f}", f"{k['cyc_min'] / 1e3:.1f}",
             f"{k['cyc_avg'] / 1e3:.1f}", f"{k['cyc_max'] / 1e3:.1f}"] for k in kernels]
    return ncu_table(columns, rows, shape, how or "`scripts/profile.sh`, clocks not locked",
                     "; SM active cycles: sm__cycles_active, least (min), mean (avg) and most (max) over the SMs.",
                     rel_path, gpu)

