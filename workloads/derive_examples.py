"""Derive the example ASTRA-sim 1.0 workloads (in libra_opt/data/examples) from model shapes.

Run ``python workloads/derive_examples.py`` to regenerate the files. Every number below is
either a published model dimension (cited) or an assumption stated here; the arithmetic is
in the code. See workloads/README.md for the derivations in prose.

Common assumptions
------------------
* Accelerator: NVIDIA A100, 312e12 dense FP16/BF16 FLOP/s (NVIDIA A100 datasheet, 2020).
* Achieved matrix efficiency: 50% for transformers, 40% for ResNet-50, 30% for DLRM's small
  MLPs (assumptions, not measurements).
* Mixed precision: activations and gradients exchanged in 2-byte FP16/BF16 (DLRM: FP32).
* Transformer FLOPs per sequence of ``s`` tokens and hidden size ``h`` (Narayanan et al.,
  SC'21, eq. 3 without the vocabulary term): attention block forward ``8 s h^2 + 4 s^2 h``,
  MLP block forward ``16 s h^2``; the input gradient costs the forward again (attention
  scores twice), the weight gradient costs the weight matmuls again.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from libra_opt.io.astra_sim import write_astra_sim  # noqa: E402
from libra_opt.io.libra import write_libra_communicator  # noqa: E402
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload  # noqa: E402

A100_FLOPS = 312e12
HERE = Path(__file__).resolve().parents[1] / "libra_opt" / "data" / "examples"


def transformer(name: str, layers: int, h: int, s: int, vocab: int, tp_span, dp_span) -> Workload:
    """Megatron tensor parallelism inside ``tp_span``, data parallelism across ``dp_span``.

    Per transformer block and sub-layer (attention, MLP): one TP all-reduce of the
    activations ``s h`` x 2 bytes in forward and one in the input gradient; the weight
    gradient is all-reduced over DP (attention ``4 h^2``, MLP ``8 h^2`` parameters, split over
    TP). One micro-batch of one sequence per NPU per step.
    """
    tp = 1
    for k in tp_span:
        tp *= k
    rate = A100_FLOPS * 0.5
    act_bytes = s * h * 2

    def t(flops: float) -> float:
        return flops / tp / rate

    attn = Layer(
        "attention",
        Phase(t(8 * s * h * h + 4 * s * s * h), (Collective("all_reduce", act_bytes, "forward"),)),
        Phase(t(8 * s * h * h + 8 * s * s * h), (Collective("all_reduce", act_bytes, "input_grad"),)),
        Phase(t(8 * s * h * h), (Collective("all_reduce", 4 * h * h / tp * 2, "weight_grad"),)),
        count=layers,
    )
    mlp = Layer(
        "mlp",
        Phase(t(16 * s * h * h), (Collective("all_reduce", act_bytes, "forward"),)),
        Phase(t(16 * s * h * h), (Collective("all_reduce", act_bytes, "input_grad"),)),
        Phase(t(16 * s * h * h), (Collective("all_reduce", 8 * h * h / tp * 2, "weight_grad"),)),
        count=layers,
    )
    # Vocabulary-parallel embedding/output layer: logits 2 s h V FLOPs, weights V h / TP.
    head = Layer(
        "embedding_head",
        Phase(t(2 * s * h * vocab)),
        Phase(t(2 * s * h * vocab)),
        Phase(t(2 * s * h * vocab), (Collective("all_reduce", vocab * h / tp * 2, "weight_grad"),)),
    )
    groups = {"forward": tp_span, "input_grad": tp_span, "weight_grad": dp_span}
    return Workload(name, (attn, mlp, head), groups)


def resnet50_stages() -> list[tuple[str, int, float]]:
    """(stage, parameters, forward MACs per 224x224 image) of ResNet-50 (He et al., CVPR 2016,
    Table 1), convolution and FC weights only (batch-norm parameters left out)."""
    stages = [("conv1", 64 * 3 * 7 * 7, 112 * 112 * 64 * 3 * 7 * 7)]
    c_in, spatial = 64, 56
    for name, mid, blocks, stride in (
        ("conv2_x", 64, 3, 1), ("conv3_x", 128, 4, 2), ("conv4_x", 256, 6, 2), ("conv5_x", 512, 3, 2)
    ):
        out = 4 * mid
        params = macs = 0
        for b in range(blocks):
            s_in = spatial
            s_out = spatial // stride if b == 0 else spatial
            p = c_in * mid + mid * mid * 9 + mid * out
            m = s_in * s_in * c_in * mid + s_out * s_out * (mid * mid * 9 + mid * out)
            if b == 0:  # projection shortcut
                p += c_in * out
                m += s_out * s_out * c_in * out
            params, macs = params + p, macs + m
            c_in, spatial = out, s_out
        stages.append((name, params, macs))
    stages.append(("fc", 2048 * 1000 + 1000, 2048 * 1000))
    return stages


def resnet50(span) -> Workload:
    """Data parallel over all NPUs, 32 images per NPU, FP16 gradients all-reduced per stage."""
    batch, rate = 32, A100_FLOPS * 0.4
    layers = []
    for name, params, macs in resnet50_stages():
        fwd = 2 * macs * batch / rate
        layers.append(Layer(
            name, Phase(fwd), Phase(fwd),
            Phase(fwd, (Collective("all_reduce", params * 2, "weight_grad"),)),
        ))
    return Workload("resnet50", tuple(layers), {"forward": span, "input_grad": span, "weight_grad": span})


def dlrm(span) -> Workload:
    """DLRM with the MLPerf Criteo-Terabyte shape (26 sparse features, 128-wide embeddings,
    bottom MLP 13-512-256-128, top MLP 479-1024-1024-512-256-1; Naumov et al. 2019 and the
    MLPerf Training reference). Embedding tables model-parallel over all NPUs (FP32 all-to-all
    of 512 samples x 26 x 128 per NPU), MLPs data parallel (FP32 gradient all-reduce)."""
    batch, rate = 512, A100_FLOPS * 0.3
    a2a = batch * 26 * 128 * 4
    bottom = [13, 512, 256, 128]
    top = [479, 1024, 1024, 512, 256, 1]
    params = sum(a * b + b for mlp in (bottom, top) for a, b in zip(mlp, mlp[1:], strict=False))
    mlp_fwd = 2 * (params - sum(b for mlp in (bottom, top) for b in mlp[1:])) * batch / rate
    emb = Layer(
        "embedding",
        Phase(batch * 26 * 128 * 4 / 2.0e12, (Collective("all_to_all", a2a, "forward"),)),
        Phase(batch * 26 * 128 * 4 / 2.0e12, (Collective("all_to_all", a2a, "input_grad"),)),
        Phase(0.0),
    )
    mlp = Layer(
        "mlp", Phase(mlp_fwd), Phase(mlp_fwd),
        Phase(mlp_fwd, (Collective("all_reduce", params * 4, "weight_grad"),)),
    )
    return Workload("dlrm", (emb, mlp), {"forward": span, "input_grad": span, "weight_grad": span})


def main() -> None:
    examples = {
        # GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, d_model 12288, context 2048,
        # vocabulary 50257. TP 16 inside chiplet x package, DP 256 over package/node/pod.
        "gpt3_175b": transformer("gpt3_175b", 96, 12288, 2048, 50257, (4, 4, 1, 1), (1, 2, 4, 32)),
        # 1T-parameter GPT (Narayanan et al. SC'21, Table 1): 128 layers, hidden 25600.
        # TP 128 inside chiplet x package x node, DP 32 over the pod.
        "transformer_1t": transformer("transformer_1t", 128, 25600, 2048, 51200, (4, 8, 4, 1), (1, 1, 1, 32)),
        "resnet50": resnet50((4, 8, 4, 32)),
        "dlrm": dlrm((4, 8, 4, 32)),
    }
    for name, wl in examples.items():
        d = HERE / name
        d.mkdir(exist_ok=True)
        spans = write_astra_sim(wl, d / "workload.txt")
        write_libra_communicator(
            {p: spans.get(p, wl.groups[p]) for p in ("forward", "input_grad", "weight_grad")},
            d / "communicator.yml",
        )
        print(f"wrote {d}/workload.txt ({wl.n_layers} layers), {d}/communicator.yml")


if __name__ == "__main__":
    main()
