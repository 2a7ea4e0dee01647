"""Which fabric dimensions a device's links form, and what collectives reach of them.

A user's bandwidth ``B_d`` is a line rate; each device states what collectives achieve of
its scale-up and scale-out links (``Device.scale_up_efficiency``, ``scale_out_efficiency``),
applied by default to the dimensions those links form in every path that compiles a
scenario. Every dimension inside the outermost one is scale-up (the split the ``fat_tree``
and ``rail_only`` builders and the search's families make); a one-dimensional fabric is
scale-up when it holds at most ``Device.scale_up_npus`` devices.
``collectives.efficiency`` overrides a dimension.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from libra_opt.errors import InputError
from libra_opt.fabric.dims import Fabric
from libra_opt.generators.devices import Device

__all__ = ["scale_up_dims", "device_link_efficiency"]


def scale_up_dims(fabric: Fabric, scale_up_npus: int) -> int:
    """How many of ``fabric``'s innermost dimensions are scale-up links (module notes).

    Examples
    --------
    >>> from libra_opt.fabric.builders import multi_dim, rail_optimized_fat_tree
    >>> scale_up_dims(rail_optimized_fat_tree(1024, 16), 8)   # the builder's HB domain
    1
    >>> scale_up_dims(multi_dim((4, 2, 64), ("ring", "ring", "switch")), 8)
    2
    >>> scale_up_dims(multi_dim((8,), ("switch",)), 8), scale_up_dims(multi_dim((64,), ("switch",)), 8)
    (1, 0)
    """
    if len(fabric.dims) >= 2:
        return len(fabric.dims) - 1
    return int(fabric.dims[0].size <= scale_up_npus)


def device_link_efficiency(fabric: Fabric, devices: Iterable[Device],
                           scale_up: int | None = None) -> Mapping[str, float | str]:
    """The efficiency the devices' links give each dimension of ``fabric`` by default (dimensions
    with none left out); ``scale_up``: the number of innermost scale-up dimensions when the
    caller knows them (default :func:`scale_up_dims`).

    Raises
    ------
    InputError
        Two devices giving one dimension different values.

    Examples
    --------
    >>> from libra_opt.fabric.builders import rail_optimized_fat_tree
    >>> from libra_opt.io.presets import load_device
    >>> dict(device_link_efficiency(rail_optimized_fat_tree(64, 8), [load_device("a100_80gb")]))
    {'hb': 'a100_nvlink_nccl'}
    """
    out: dict[str, float | str] = {}
    for dev in devices:
        k = scale_up if scale_up is not None else scale_up_dims(fabric, dev.scale_up_npus)
        for i, d in enumerate(fabric.dims):
            value = dev.scale_up_efficiency if i < k else dev.scale_out_efficiency
            if d.name in out and out[d.name] != (value or "none"):
                raise InputError(
                    f"the workloads' devices give dimension {d.name!r} different collective "
                    f"efficiencies ({out[d.name]!r}, {value or 'none'!r}); choose one with "
                    f"collectives.efficiency.{d.name}", field=f"collectives.efficiency.{d.name}")
            out[d.name] = value or "none"
    return {k: v for k, v in out.items() if v != "none"}
