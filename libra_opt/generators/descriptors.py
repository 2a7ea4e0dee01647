"""Model descriptors: what a network *is* (not how it is parallelized), validated from YAML.

The ``kind`` key tells ``transformer`` (:class:`TransformerSpec`, dense or MoE), ``dlrm``
(:class:`DLRMSpec`) and ``resnet`` (:class:`ResNetSpec`) apart; presets ship in
``libra_opt/data/models`` (:func:`libra_opt.io.presets.load_model`).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from libra_opt.errors import InputError
from libra_opt.schema import StrictModel, validate_as

__all__ = ["MLASpec", "MoESpec", "TransformerSpec", "DLRMSpec", "ResNetStage", "ResNetSpec",
           "ModelSpec", "model_from_dict"]

PosInt = Annotated[int, Field(gt=0, strict=True)]


class MLASpec(StrictModel):
    """Multi-head latent attention (DeepSeek-V2/V3): low-rank query and key/value projections.

    Parameters
    ----------
    q_lora_rank : int, optional
        Rank of the query down-projection; ``None`` projects queries directly.
    kv_lora_rank : int
        Rank of the joint key/value down-projection (the cached latent).
    qk_nope_head_dim, qk_rope_head_dim, v_head_dim : int
        Per-head query/key dimensions without and with rotary embedding; value dimension.
    """

    q_lora_rank: PosInt | None = None
    kv_lora_rank: PosInt
    qk_nope_head_dim: PosInt
    qk_rope_head_dim: PosInt
    v_head_dim: PosInt


class MoESpec(StrictModel):
    """Mixture-of-experts feed-forward layers.

    Parameters
    ----------
    n_experts : int
        Routed experts per MoE layer.
    top_k : int
        Routed experts each token is sent to.
    expert_ffn_hidden_size : int
        Inner size of one expert's feed-forward network.
    n_shared_experts : int
        Experts every token goes through (DeepSeekMoE), each of ``expert_ffn_hidden_size``.
    first_dense_layers : int
        The first layers keep a dense FFN (``ffn_hidden_size``); DeepSeek-V3 uses 3.
    layer_frequency : int
        After the dense prefix, every ``layer_frequency``-th layer is MoE (GShard uses 2).
    capacity_factor : float, optional
        Expert capacity ``C = capacity_factor * tokens * top_k / n_experts``; buffers are
        padded to ``C``. ``None`` is dropless routing (no padding).
    """

    n_experts: PosInt
    top_k: PosInt
    expert_ffn_hidden_size: PosInt
    n_shared_experts: int = Field(default=0, ge=0, strict=True)
    first_dense_layers: int = Field(default=0, ge=0, strict=True)
    layer_frequency: PosInt = 1
    capacity_factor: float | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _check(self) -> MoESpec:
        if self.top_k > self.n_experts:
            raise ValueError(f"top_k {self.top_k} exceeds n_experts {self.n_experts}")
        return self


class TransformerSpec(StrictModel):
    """A decoder-only transformer language model.

    Parameters
    ----------
    n_layers, hidden_size, ffn_hidden_size, n_heads : int
        Layers ``L``, model width ``h``, dense FFN inner size ``f``, query heads ``a``.
    n_kv_heads : int, optional
        Key/value heads ``g`` (grouped-query attention); default ``n_heads``.
    head_dim : int, optional
        Per-head dimension ``d``; default ``hidden_size / n_heads``.
    vocab_size, seq_len : int
        Vocabulary ``V`` and training sequence length ``s``.
    gated_mlp : bool
        SwiGLU-style FFN with three matrices (gate, up, down) instead of two.
    bias : bool
        Linear layers carry biases (GPT-2/3).
    norm : {'layernorm', 'rmsnorm'}
        LayerNorm has a weight and a bias per channel, RMSNorm only a weight.
    tied_embeddings : bool
        The output projection reuses the input embedding matrix.
    learned_position_embeddings : bool
        An ``s x h`` learned position table (GPT-3); ``False`` for rotary embeddings.
    dropout : bool
        Dropout layers are active (their masks count in activation memory).
    mla : MLASpec, optional
        Multi-head latent attention instead of (grouped-query) multi-head attention.
    moe : MoESpec, optional
        Mixture-of-experts FFN layers.
    reference : str, optional
        Where the numbers come from.
    """

    kind: Literal["transformer"] = "transformer"
    name: str
    n_layers: PosInt
    hidden_size: PosInt
    ffn_hidden_size: PosInt
    n_heads: PosInt
    n_kv_heads: PosInt | None = None
    head_dim: PosInt | None = None
    vocab_size: PosInt
    seq_len: PosInt
    gated_mlp: bool = False
    bias: bool = False
    norm: Literal["layernorm", "rmsnorm"] = "layernorm"
    tied_embeddings: bool = False
    learned_position_embeddings: bool = False
    dropout: bool = False
    mla: MLASpec | None = None
    moe: MoESpec | None = None
    reference: str | None = None

    @model_validator(mode="after")
    def _check(self) -> TransformerSpec:
        if self.head_dim is None and self.mla is None and self.hidden_size % self.n_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of n_heads {self.n_heads}; "
                "give head_dim explicitly"
            )
        g = self.kv_heads
        if self.n_heads % g:
            raise ValueError(f"n_heads {self.n_heads} is not a multiple of n_kv_heads {g}")
        if self.mla is not None and self.n_kv_heads not in (None, self.n_heads):
            raise ValueError("with mla, n_kv_heads must equal n_heads (or be omitted)")
        if self.moe is not None and self.moe.first_dense_layers > self.n_layers:
            raise ValueError(
                f"moe.first_dense_layers {self.moe.first_dense_layers} exceeds n_layers "
                f"{self.n_layers}"
            )
        return self

    @property
    def kv_heads(self) -> int:
        """Key/value heads ``g`` (``n_heads`` unless grouped-query attention)."""
        return self.n_kv_heads or self.n_heads

    @property
    def qk_head_dim(self) -> int:
        """Per-head query/key dimension."""
        if self.mla is not None:
            return self.mla.qk_nope_head_dim + self.mla.qk_rope_head_dim
        return self.head_dim or self.hidden_size // self.n_heads

    @property
    def v_head_dim(self) -> int:
        """Per-head value dimension."""
        if self.mla is not None:
            return self.mla.v_head_dim
        return self.head_dim or self.hidden_size // self.n_heads

    def is_moe_layer(self, index: int) -> bool:
        """Whether layer ``index`` (0-based) has a mixture-of-experts FFN.

        Examples
        --------
        >>> m = TransformerSpec(name="t", n_layers=4, hidden_size=8, ffn_hidden_size=16,
        ...     n_heads=2, vocab_size=10, seq_len=4,
        ...     moe={"n_experts": 4, "top_k": 2, "expert_ffn_hidden_size": 8,
        ...          "first_dense_layers": 1, "layer_frequency": 2})
        >>> [m.is_moe_layer(i) for i in range(4)]
        [False, True, False, True]
        """
        moe = self.moe
        if moe is None or index < moe.first_dense_layers:
            return False
        return (index - moe.first_dense_layers) % moe.layer_frequency == 0


class DLRMSpec(StrictModel):
    """Deep-learning recommendation model (Naumov et al. 2019).

    Parameters
    ----------
    n_dense_features : int
        Continuous inputs to the bottom MLP.
    embedding_dim : int
        Width of every embedding vector (also the bottom MLP's output width).
    embedding_rows : list of int
        Rows of each embedding table.
    lookups_per_table : int
        Rows gathered and pooled per table per sample (1 for Criteo).
    bottom_mlp, top_mlp : list of int
        Output widths of the MLP layers (the top MLP's input is the interaction output).
    interaction : {'dot'}
        Pairwise dot products of the ``T + 1`` vectors, concatenated with the dense vector.
    """

    kind: Literal["dlrm"]
    name: str
    n_dense_features: PosInt
    embedding_dim: PosInt
    embedding_rows: list[PosInt] = Field(min_length=1)
    lookups_per_table: PosInt = 1
    bottom_mlp: list[PosInt] = Field(min_length=1)
    top_mlp: list[PosInt] = Field(min_length=1)
    interaction: Literal["dot"] = "dot"
    reference: str | None = None

    @model_validator(mode="after")
    def _check(self) -> DLRMSpec:
        if self.bottom_mlp[-1] != self.embedding_dim:
            raise ValueError(
                f"bottom_mlp must end at embedding_dim {self.embedding_dim} "
                f"(got {self.bottom_mlp[-1]})"
            )
        return self


class ResNetStage(StrictModel):
    """One stage of bottleneck blocks: ``blocks`` blocks of inner width ``width``."""

    blocks: PosInt
    width: PosInt


class ResNetSpec(StrictModel):
    """Bottleneck ResNet (He et al. 2016), e.g. ResNet-50 = stages (3, 4, 6, 3).

    Parameters
    ----------
    image_size : int
        Input resolution (square).
    in_channels, n_classes, stem_channels, expansion : int
        Image channels, classifier outputs, stem conv width, bottleneck expansion.
    stages : list of ResNetStage
        The first stage has stride 1 (after the stem's max-pool), the others stride 2.
    downsample_on_3x3 : bool
        ``True`` (ResNet v1.5, torchvision, MLPerf): a downsampling block strides in its
        3x3 convolution; ``False`` (He et al. 2016): in its first 1x1 convolution.
    """

    kind: Literal["resnet"]
    name: str
    image_size: PosInt = 224
    in_channels: PosInt = 3
    n_classes: PosInt = 1000
    stem_channels: PosInt = 64
    expansion: PosInt = 4
    stages: list[ResNetStage] = Field(min_length=1)
    downsample_on_3x3: bool = True
    reference: str | None = None


ModelSpec = Annotated[TransformerSpec | DLRMSpec | ResNetSpec, Field(discriminator="kind")]


def model_from_dict(data: object) -> TransformerSpec | DLRMSpec | ResNetSpec:
    """Validate a model descriptor mapping.

    Raises
    ------
    InputError
        Naming the field and what was expected.

    Examples
    --------
    >>> m = model_from_dict({"kind": "transformer", "name": "tiny", "n_layers": 2,
    ...     "hidden_size": 64, "ffn_hidden_size": 256, "n_heads": 4, "vocab_size": 100,
    ...     "seq_len": 32})
    >>> m.qk_head_dim
    16
    >>> model_from_dict({"kind": "transformer", "name": "x", "layers": 2})
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: unknown key 'layers' (and 6 more problems)
    """
    if not isinstance(data, dict):
        raise InputError("expected a mapping (a model descriptor)")
    if "kind" not in data:
        raise InputError("required field is missing (one of transformer, dlrm, resnet)",
                         field="kind")
    return validate_as(ModelSpec, data, None)
