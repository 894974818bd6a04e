"""Stock baseline for `npm run bench:engine -- --backend cuda`: Hugging Face transformers (eager
attention, bf16, KV cache on) decoding greedily on the same checkpoint and GPU.

    python3 bench/hf_baseline.py MODEL_DIR [new_tokens=64]

Prints one JSON line: {"decode1": tokens/s at batch 1, "transformers": version, "torch": version}.
Exit status 2 when torch/transformers (with Glm4ForCausalLM) or a GPU are missing.
"""
import json
import sys
import time


def main() -> int:
    try:
        import torch
        import transformers
        from transformers import AutoModelForCausalLM
    except ImportError as err:
        print(f"hf_baseline: {err}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("hf_baseline: torch sees no GPU", file=sys.stderr)
        return 2
    model_dir = sys.argv[1]
    new_tokens = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.bfloat16, attn_implementation="eager")
    model = model.to("cuda").eval()
    ids = torch.tensor([[(i * 31 + 977 + 3) % 1000 + 3 for i in range(8)]], device="cuda")
    with torch.no_grad():
        model.generate(ids, max_new_tokens=4, min_new_tokens=4, do_sample=False)  # warm-up
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(ids, max_new_tokens=new_tokens, min_new_tokens=new_tokens, do_sample=False)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    n = out.shape[1] - ids.shape[1]
    print(json.dumps({"decode1": n / dt, "transformers": transformers.__version__, "torch": torch.__version__}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
