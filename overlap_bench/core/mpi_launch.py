"""How a multi-GPU run on the lent machines is started, said once (issue 85): NVLink multicast kept off (NCCL's NVLS,
PyTorch's symmetric memory, NVSHMEM's), as those machines require, and mpirun without binding (each rank's threads
float over the cores). MULTICAST_OFF holds the variables and their values; MPIRUN is the mpirun line that forwards
them to every rank (ob-headline, ob-gate and bench_parts' `{mpi}` start with it); scripts/bench_gpu.sh exports them
from here for every step it runs (mpirun's and torchrun's).

Usage (a script's environment, one VARIABLE=VALUE a line):  python3 -m overlap_bench.core.mpi_launch
"""
from overlap_bench.core import ob_tool

MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# -x VARIABLE forwards the caller's value (bench_gpu.sh's, or one a person set to measure with multicast on).
MPIRUN = "mpirun --bind-to none " + " ".join(f"-x {name}" for name in MULTICAST_OFF)


def main(argv=None):
    ob_tool.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    print("\n".join(f"{name}={value}" for name, value in MULTICAST_OFF.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(ob_tool.main_guard(main))
