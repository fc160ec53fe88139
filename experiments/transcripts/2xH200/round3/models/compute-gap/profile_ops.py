# Device call P2 (1 GPU): PyTorch's compute-only step of gpt2-xl (1 block, seq 4096) by aten op.
import json, sys, torch
sys.path.insert(0, "scripts")
import torch_transformer as tt
torch.backends.cuda.matmul.allow_tf32 = True
shape = json.load(open("gpu_shape.json"))
seq = 4096
m = tt.Transformer(shape, 1, device="cuda")
opt = torch.optim.SGD(m.parameters(), lr=1e-3)
x = torch.randint(0, shape["vocab"], (1, seq), device="cuda"); y = torch.randint(0, shape["vocab"], (1, seq), device="cuda")
def step():
    opt.zero_grad(set_to_none=True); tt.next_token_loss(m, x, y).backward(); opt.step()
for _ in range(3): step()
torch.cuda.synchronize()
from torch.profiler import profile, ProfilerActivity
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
    step(); torch.cuda.synchronize()
print(prof.key_averages(group_by_input_shape=True).table(sort_by="self_cuda_time_total", row_limit=25, max_name_column_width=40, max_shapes_column_width=70), flush=True)
print(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=14, max_name_column_width=140), flush=True)
