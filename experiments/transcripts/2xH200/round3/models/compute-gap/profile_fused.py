# PyTorch's compute-only step of gpt2-xl on one H200 with the fused causal softmax (scripts/causal_softmax.py), as
# profile_kernels.py and profile_ops.py measured it before: the step of 4 blocks at seq 4096 and 2048 (CUDA events,
# 5 steps after 3), then torch.profiler's table by aten op and input shape of 1 block at seq 4096.
# Usage (repository root, one GPU): python3 results/2xH200/round3/models/compute-gap/profile_fused.py
import json, pathlib, sys
import torch
from torch.profiler import profile, ProfilerActivity
sys.path.insert(0, "scripts")
import torch_transformer as tt
torch.backends.cuda.matmul.allow_tf32 = True
shape = json.loads((pathlib.Path(__file__).parent / "gpt2-xl.shape.json").read_text())


def model(blocks, seq):
    torch.manual_seed(0)
    m = tt.Transformer(shape, blocks, device="cuda")
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    x, y = (torch.randint(0, shape["vocab"], (1, seq), device="cuda") for _ in range(2))

    def step():
        opt.zero_grad(set_to_none=True)
        tt.next_token_loss(m, x, y).backward()
        opt.step()
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    return step


for seq in (4096, 2048):
    step = model(4, seq)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(5):
        step()
    e.record()
    torch.cuda.synchronize()
    print(f"seq {seq}: step {s.elapsed_time(e) / 5:.2f} ms", flush=True)
    del step
    torch.cuda.empty_cache()
step = model(1, 4096)
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    step()
    torch.cuda.synchronize()
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cuda_time_total", row_limit=25,
      max_name_column_width=40, max_shapes_column_width=70), flush=True)
