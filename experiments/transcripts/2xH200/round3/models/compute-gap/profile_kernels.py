# Device call P (1 GPU): where PyTorch's compute-only step of gpt2-xl (4 blocks, seq 4096) spends its GPU time.
import json, os, sys, torch
sys.path.insert(0, "scripts")
import torch_transformer as tt
torch.backends.cuda.matmul.allow_tf32 = True
shape = json.load(open("gpu_shape.json"))
for seq in (4096, 2048):
    torch.manual_seed(0)
    m = tt.Transformer(shape, 4, device="cuda")
    opt = torch.optim.SGD(m.parameters(), lr=1e-3)
    x = torch.randint(0, shape["vocab"], (1, seq), device="cuda"); y = torch.randint(0, shape["vocab"], (1, seq), device="cuda")
    def step():
        opt.zero_grad(set_to_none=True); tt.next_token_loss(m, x, y).backward(); opt.step()
    for _ in range(3): step()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); [step() for _ in range(5)]; e.record(); torch.cuda.synchronize()
    print(f"seq {seq}: step {s.elapsed_time(e)/5:.2f} ms", flush=True)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(2): step()
        torch.cuda.synchronize()
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=22, max_name_column_width=70), flush=True)
    del m, opt
