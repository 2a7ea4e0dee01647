"""DLRM: model-parallel embeddings (all-to-all) and data-parallel MLPs (all-reduce).

The hybrid parallelization of Naumov et al. (2019, Sec. 4): tables sharded over all ``N``
NPUs, an all-to-all delivering each NPU the pooled vectors of its samples (and their
gradients back); replicated MLPs with all-reduced gradients. Per NPU and micro-batch of ``b``
samples, ``T`` tables of width ``d``:

* all-to-all of ``b T d beta``;
* lookups ``b T L d k_p`` bytes read (balanced tables), the same written by the sparse SGD
  update (tables carry no gradient or optimizer state, as the MLPerf reference);
* MLP FLOPs ``2 b sum(in x out)`` per pass; the dot interaction ``b (T+1) T d`` forward,
  twice that backward.
"""

from __future__ import annotations

import itertools

from libra_opt.fabric.dims import Fabric
from libra_opt.generators.descriptors import DLRMSpec
from libra_opt.generators.devices import ComputeEfficiency, Device, compute_time_s, memory_time_s
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.generators.mapping import Placement
from libra_opt.generators.parallelism import Parallelism
from libra_opt.generators.resnet import check_data_parallel_only, data_parallel_workload
from libra_opt.traffic.workload import Collective, Layer, Phase

__all__ = ["dlrm_mlp_shapes", "dlrm_params", "dlrm_flops_per_sample", "dlrm_workload"]


def dlrm_mlp_shapes(spec: DLRMSpec) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(in, out) widths of the bottom and top MLP layers (the top MLP's input: the dense vector
    and the ``(T+1) T / 2`` pairwise dot products).

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> bot, top = dlrm_mlp_shapes(load_model("dlrm_criteo_1tb"))
    >>> bot[0], top[0]
    ((13, 512), (479, 1024))
    """
    n_vec = len(spec.embedding_rows) + 1
    bot = [spec.n_dense_features, *spec.bottom_mlp]
    top = [spec.embedding_dim + n_vec * (n_vec - 1) // 2, *spec.top_mlp]
    return list(itertools.pairwise(bot)), list(itertools.pairwise(top))


def dlrm_params(spec: DLRMSpec) -> tuple[int, int]:
    """(embedding parameters, MLP parameters with biases).

    Examples
    --------
    >>> from libra_opt.io.presets import load_model
    >>> emb, mlp = dlrm_params(load_model("dlrm_criteo_1tb"))
    >>> emb == 187_767_399 * 128, mlp
    (True, 2368897)
    """
    bot, top = dlrm_mlp_shapes(spec)
    mlp = sum(i * o + o for i, o in bot + top)
    return sum(spec.embedding_rows) * spec.embedding_dim, mlp


def dlrm_flops_per_sample(spec: DLRMSpec) -> tuple[float, float]:
    """Forward (MLP, interaction) FLOPs per sample."""
    bot, top = dlrm_mlp_shapes(spec)
    mlp = 2.0 * sum(i * o for i, o in bot + top)
    n_vec = len(spec.embedding_rows) + 1
    inter = 2.0 * spec.embedding_dim * n_vec * (n_vec - 1) / 2
    return mlp, inter


def dlrm_workload(spec: DLRMSpec, par: Parallelism, device: Device, fabric: Fabric,
                  placement: Placement, efficiency: ComputeEfficiency, name: str | None = None,
                  check_memory: bool = True) -> GeneratedWorkload:
    """DLRM training step on one NPU (see module docstring). Group ``emb`` = all NPUs."""
    check_data_parallel_only(par, "DLRM")
    prec = par.precision
    dtype = prec.compute_dtype
    b, m, n = par.micro_batch_size, par.micro_batches, par.dp
    n_tables = len(spec.embedding_rows)
    bot, top = dlrm_mlp_shapes(spec)
    emb_params, mlp_params = dlrm_params(spec)
    beta = prec.activation_bytes

    lookup_bytes = b * n_tables * spec.lookups_per_table * spec.embedding_dim * prec.param_bytes
    a2a = ((Collective("all_to_all", b * n_tables * spec.embedding_dim * beta, "emb"),)
           if n > 1 else ())
    t_lookup = memory_time_s(lookup_bytes, device)

    def mlp_layer(label: str, shapes: list[tuple[int, int]]) -> tuple[Layer, Collective | None]:
        f = 2.0 * b * sum(i * o for i, o in shapes)
        t = compute_time_s(f, device, dtype, efficiency)
        params = sum(i * o + o for i, o in shapes)
        ar = Collective("all_reduce", params * prec.grad_bytes, "dp") if n > 1 else None
        wg = (ar,) if (ar is not None and m == 1) else ()
        return Layer(label, Phase(t), Phase(t), Phase(t, wg), count=m), ar

    _, inter_f = dlrm_flops_per_sample(spec)
    t_inter = compute_time_s(inter_f * b, device, dtype, efficiency)
    bottom, ar_b = mlp_layer("bottom_mlp", bot)
    top_l, ar_t = mlp_layer("top_mlp", top)
    layers = [
        bottom,
        Layer("embedding", Phase(t_lookup, a2a), Phase(0.0, a2a), Phase(t_lookup), count=m),
        Layer("interaction", Phase(t_inter), Phase(2.0 * t_inter), count=m),
        top_l,
    ]
    sync = [c for c in (ar_b, ar_t) if c is not None]
    if m > 1 and sync:
        layers.append(Layer("dp_grad_sync", weight_grad=Phase(0.0, tuple(sync))))
    widths = sum(o_ for _, o_ in bot + top) + n_tables * spec.embedding_dim + top[0][0]
    mlp_f, inter_f = dlrm_flops_per_sample(spec)
    groups = placement.groups()
    groups["emb"] = groups["dp"]
    return data_parallel_workload(
        spec.name, layers, groups, mlp_params, emb_params * prec.param_bytes / n,
        2.0 * b * widths * beta, 3.0 * (mlp_f + inter_f), par, device, fabric, placement,
        efficiency, name, check_memory,
        ("tokens_per_step counts samples",
         "embedding tables sharded evenly over all NPUs (group 'emb' = 'dp')"))
