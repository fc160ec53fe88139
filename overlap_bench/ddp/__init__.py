"""The torch side: PyTorch DDP and FSDP2 on the same work as phase 4 (bench_ddp, ddp_steps), its transformer layers and
the probe's state and timing helpers."""
