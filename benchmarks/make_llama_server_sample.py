"""Measure the llama-server sample run: ``perfmodel sweep --backend http`` against llama.cpp's ``llama-server``.

Builds the random-weight ``perfmodel-tiny-llama`` (the catalog model of the local-engine sample, here with a
locally trained 4,096-piece SentencePiece tokenizer), converts it to GGUF with llama.cpp's converter, starts
``llama-server --metrics -np SLOTS -t 1`` on 127.0.0.1 (the binary from ``tools/build_llama_server.sh``),
runs the sweep through the CLI into a throw-away store, exports the dataset and stops the server.

    PERFMODEL_HOME=/tmp/llama-sample-home python benchmarks/make_llama_server_sample.py \\
        -o sample_runs/perfmodel-tiny-llama_cpu-x86-2vcpu_llama-server.csv

Prints the CLI's progress, the dataset id and the server's version line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from llama_server import convert_to_gguf, llama_server_binary, start_llama_server  # noqa: E402
from sweep_server import build_tiny_model  # noqa: E402

from perfmodel.sweep.local_engine import SAMPLE_HARDWARE, SAMPLE_MODEL, TINY_LLAMA_CONFIG  # noqa: E402


def main() -> int:
    """Run the sample sweep; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", type=Path, required=True, help="CSV to write")
    ap.add_argument("--slots", type=int, default=16, help="llama-server -np (default 16)")
    ap.add_argument("--concurrency", default="1:16:+1", help="concurrency grid (default 1:16:+1)")
    ap.add_argument("--input-len", default="64,256", help="prompt lengths (default 64,256)")
    ap.add_argument("--output-len", default="64", help="output lengths (default 64)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--dataset", default="perfmodel-tiny-llama-llama-server-cpu")
    ap.add_argument("--port", type=int, default=None)
    args = ap.parse_args()

    exe = llama_server_binary()
    if exe is None:
        print("llama-server is not built: run tools/build_llama_server.sh", file=sys.stderr)
        return 2
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True).stderr.strip()
    work = Path(tempfile.mkdtemp(prefix="llama-sample-"))
    model_dir = build_tiny_model(work / SAMPLE_MODEL, config=TINY_LLAMA_CONFIG)
    gguf = convert_to_gguf(model_dir, work / f"{SAMPLE_MODEL}.gguf")
    server = start_llama_server(gguf, slots=args.slots, ctx_per_slot=512, alias=SAMPLE_MODEL, port=args.port,
                                log_dir=work)
    print(f"llama-server {version.splitlines()[0] if version else '?'} at {server.url} (log {server.log_path})")
    try:
        cmd = [sys.executable, "-m", "perfmodel", "sweep", "--backend", "http", "--target", server.url,
               "--server-type", "llama.cpp", "--framework", "llama.cpp", "--model", SAMPLE_MODEL,
               "--hardware", SAMPLE_HARDWARE, "--concurrency", args.concurrency, "--input-len", args.input_len,
               "--output-len", args.output_len, "--repeats", str(args.repeats), "--warmup", "2",
               "--dataset", args.dataset, "--json"]
        print(" ".join(cmd[1:]))
        proc = subprocess.run(cmd, capture_output=True, text=True)
        sys.stderr.write(proc.stderr[-3000:])
        if proc.returncode != 0:
            print(proc.stdout)
            return proc.returncode
        result = json.loads(proc.stdout)
        print(json.dumps(result))
    finally:
        server.stop()
    subprocess.run([sys.executable, "-m", "perfmodel", "export", result["dataset_id"], "-o", str(args.output)],
                   check=True)
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
