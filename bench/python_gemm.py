# bf16emu.gemm on 512^3, sm90 bf16, threads=1 (issue 43 item 1): best of 3, G MAC/s, the load average.
# Run: PYTHONPATH=build/python python3 bench/python_gemm.py
import time, numpy as np, bf16emu, os
n = 512
rng = np.random.default_rng(1)
a = (rng.standard_normal((n, n)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16); b = (rng.standard_normal((n, n)).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
bf16emu.gemm(a[:8], b, arch="sm90", a_format="bf16", threads=1)
ts = []
for _ in range(3):
    t = time.perf_counter(); d = bf16emu.gemm(a, b, arch="sm90", a_format="bf16", threads=1); ts.append(time.perf_counter() - t)
t = min(ts)
print(f"512^3 sm90 bf16 threads=1: best of 3 {t*1e3:.1f} ms, {n**3/t/1e9:.2f} G MAC/s; load {os.getloadavg()[0]:.2f}")
print("checksum", np.asarray(d, dtype=np.float32).view(np.uint32).astype(np.uint64).sum())
