"""What the ranks decide together (overlap_bench.probe): a refusal, each step's slowest rank, whether the replicas
agree. Every collective of the probe's own is here, on the device the backend reduces on. Torch only."""
import torch
import torch.distributed as dist


def comm_device(device):
    """Where the probe's own collectives run: the GPU under NCCL, the host under gloo (never a CUDA tensor through
    gloo)."""
    return device if dist.get_backend() == "nccl" else torch.device("cpu")


def any_rank(flag, device):
    """Whether `flag` is true on any rank (every rank told)."""
    found = torch.tensor([1 if flag else 0], dtype=torch.int32, device=comm_device(device))
    dist.all_reduce(found, op=dist.ReduceOp.MAX)
    return bool(found.item())


def slowest(values, device):
    """Each of `values` (floats, in the same order on every rank) as the largest any rank holds."""
    found = torch.tensor(values, dtype=torch.float64, device=comm_device(device))
    dist.all_reduce(found, op=dist.ReduceOp.MAX)
    return found.cpu().tolist()


def replicas_agree(tensors, device):
    """Every rank's `tensors` bit for bit rank 0's: each broadcast from rank 0 in turn (one tensor's memory) and
    compared; every rank told whether all agreed. Returns (agreed, tensors compared)."""
    on = comm_device(device)
    same, count = True, 0
    with torch.no_grad():
        for p in tensors:
            mine = p.to(on)
            theirs = mine.clone()
            dist.broadcast(theirs, src=0)
            same &= bool(torch.equal(mine.view(torch.uint8) if mine.dim() else mine,
                                     theirs.view(torch.uint8) if theirs.dim() else theirs))
            count += 1
    return not any_rank(not same, device), count
