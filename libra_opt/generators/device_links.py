"""Which fabric dimensions a device's links form, and what collectives reach of them.

A bandwidth a user gives (``B_d``, GB/s per NPU) is always a line rate. What collectives
achieve of it is part of the model: each device states it for its scale-up (NVLink-class)
and scale-out links (:attr:`~libra_opt.generators.devices.Device.scale_up_efficiency`,
``scale_out_efficiency``: a measured nccl-tests curve, a published fraction, or none), and it
applies by default to the dimensions those links form, in every path that compiles a
scenario (evaluate, solve, sweeps, search, compare) and in the validation tables.

**Which dimensions are scale-up.** Every dimension inside the outermost one forms the HB
(scale-up) domain and the outermost dimension is scale-out -- the split the ``fat_tree`` and
``rail_only`` builders, :func:`~libra_opt.fabric.builders.as_family` and the search's
fabric families make, so a dimension keeps its class when a sweep or the search resizes it.
A one-dimensional fabric is one scale-up domain when it holds at most
:attr:`~libra_opt.generators.devices.Device.scale_up_npus` devices (8 on HGX boards), else
it is scale-out. ``collectives: {efficiency: {dim: curve | preset | fraction | none}}``
picks another value for a dimension, or none (the line rate).
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
    """The efficiency the devices' links give each dimension of ``fabric`` by default.

    Parameters
    ----------
    fabric : Fabric
    devices : iterable of Device
        The devices of the workloads that run on ``fabric``.
    scale_up : int, optional
        Number of innermost scale-up dimensions when the caller knows them (a validation
        cluster's node); default :func:`scale_up_dims`.

    Returns
    -------
    mapping of str to float or str
        Dimension name -> the device's ``scale_up_efficiency`` or ``scale_out_efficiency``
        (dimensions with none are left out).

    Raises
    ------
    InputError
        Two devices giving one dimension different values (name it in
        ``collectives.efficiency``).

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
