"""What does an event recorded between layers cost a replayed step? PyTorch's compute-only step of phase 4's MLP
captured in a CUDA graph without and with an external event recorded after every layer's forward and backward (as
phase 4's step marks are), replays timed with CUDA events; then phase 4's compute-only step under --graph on one
rank for comparison (run by the shell script)."""
import sys
import torch
from torch import nn

torch.backends.cuda.matmul.allow_tf32 = True
for text in sys.argv[1:]:
    h, l, b = map(int, text.split(","))
    torch.manual_seed(0)
    mods = []
    for i in range(l):
        mods.append(nn.Linear(h, h, bias=False, device="cuda"))
        if i < l - 1:
            mods.append(nn.ReLU())
    model = nn.Sequential(*mods)
    x = torch.rand(b, h, device="cuda") * 2 - 1
    t = torch.rand(b, h, device="cuda") * 2 - 1
    opt = torch.optim.SGD(model.parameters(), lr=0.01, fused=True)
    events = [torch.cuda.Event(external=True) for _ in range(4 * l + 4)]
    marks = {"on": False, "n": 0}

    def mark(*_):
        if marks["on"]:
            events[marks["n"] % len(events)].record()
            marks["n"] += 1
    for m in model:
        if isinstance(m, nn.Linear):
            m.register_forward_hook(mark)
            m.register_full_backward_hook(mark)

    def step():
        opt.zero_grad(set_to_none=True)
        nn.functional.mse_loss(model(x), t).backward()
        opt.step()
    out = {}
    for on in (False, True, False, True):
        marks["on"] = on
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=s):
                step()
        torch.cuda.current_stream().wait_stream(s)
        times = []
        for _ in range(40):
            a, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); g.replay(); e.record(); e.synchronize()
            times.append(a.elapsed_time(e))
        times.sort()
        out.setdefault(on, []).append(times[len(times) // 2])
        del g
    print(f"{text}: torch graph, no marks {min(out[False]):.4f} ms, marks after every layer ({marks['n']} recorded) "
          f"{min(out[True]):.4f} ms")
