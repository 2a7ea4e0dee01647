"""ASTRA-sim 1.0 workload text: one line per layer, 12 fields, times in ns, sizes in bytes.

Fields: ``name reserved fwd_compute fwd_comm fwd_size ig_compute ig_comm ig_size
wg_compute wg_comm wg_size update_time``. Communication types: ``NONE``, ``ALLREDUCE``,
``ALLGATHER``, ``REDUCESCATTER``, ``ALLTOALL``. Optional header lines (a parallelism
policy line and a layer-count line) are accepted.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from libra_opt.errors import InputError, short_repr
from libra_opt.generators.generated import GeneratedWorkload
from libra_opt.io.files import ParseCache, read_text
from libra_opt.io.libra import write_libra_communicator
from libra_opt.io.output import write_text_atomic
from libra_opt.options import PHASES, CollectiveKind
from libra_opt.traffic.workload import Collective, Layer, Phase, Workload, walk_phases

__all__ = [
    "check_exportable",
    "read_astra_sim",
    "write_astra_sim",
    "parse_astra_sim",
    "merge_phase_collectives",
    "export_astra_sim",
]

_COMM_IN: dict[str, CollectiveKind] = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "alltoall": "all_to_all",
}
_COMM_OUT = {v: k.upper() for k, v in _COMM_IN.items()}
_PHASE_FIELDS = (("forward", 2), ("input_grad", 5), ("weight_grad", 8))
_TWELVE_FIELDS = ("a layer line has 12 fields (name, reserved, then compute/comm/size for "
                  "forward, input-gradient, weight-gradient, then update time)")


def _number(tok: str, source: str, what: str) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise InputError(f"{what} {short_repr(tok, 80)} is not a number", source=source) from None
    if v != v or v in (float("inf"), float("-inf")) or v < 0:
        raise InputError(f"{what} {short_repr(tok, 80)} must be finite and >= 0", source=source)
    return v


def _lines(text: str) -> list[str]:
    """``text.splitlines()``; for ASCII text broken by ``\\n`` alone (ASTRA-sim files), by
    a search for ``\\n`` (faster: splitlines tests every character for eight breaks)."""
    if text.isascii() and not any(ch in text for ch in "\r\x0b\x0c\x1c\x1d\x1e"):
        raw = text.split("\n")
        if raw[-1] == "":
            raw.pop()
        return raw
    return text.splitlines()


def _parse_fields(f: list[str], groups: Mapping[str, tuple[int, ...]], source: str
                  ) -> tuple[dict[str, Phase], float]:
    """The phases and the update time in ns (as written) of one layer line split into
    fields; its errors are given the line's position by the caller."""
    if len(f) != 12:
        raise InputError(f"{_TWELVE_FIELDS}; found {len(f)}", source=source)
    phases = {}
    for pname, at in _PHASE_FIELDS:
        compute_ns = _number(f[at], source, f"{pname} compute time")
        kind_tok = f[at + 1].lower()
        size = _number(f[at + 2], source, f"{pname} size")
        colls: tuple[Collective, ...] = ()
        if kind_tok != "none":
            if kind_tok not in _COMM_IN:
                raise InputError(f"{pname} communication {short_repr(f[at + 1], 80)} is not "
                                 "NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER or ALLTOALL",
                                 source=source)
            if pname not in groups:
                raise InputError(f"no communicator group for phase {pname}", source=source)
            colls = (Collective(_COMM_IN[kind_tok], size, pname),)
        phases[pname] = Phase(compute_ns * 1e-9, colls)
    return phases, _number(f[11], source, "update time")


def parse_astra_sim(text: str, name: str, groups: Mapping[str, tuple[int, ...]],
                    source: str = "<text>") -> Workload:
    """Parse ASTRA-sim 1.0 text. Collectives of each phase use the group of that phase
    (``forward``, ``input_grad``, ``weight_grad`` keys of ``groups``). Each distinct line is
    parsed once; the lines that repeat it share its (immutable) layer."""
    raw = _lines(text)
    content = {r: s if (s := r.strip()) and s[0] != "#" else "" for r in dict.fromkeys(raw)}
    # (line number, text) of the first two content lines
    head = list(itertools.islice(((i + 1, content[r]) for i, r in enumerate(raw) if content[r]), 2))
    declared = None
    body_from = head[0][0] - 1 if head else len(raw)
    if head and len(head[0][1].split()) != 12:
        # A header is a parallelism-policy line followed by the layer count; anything else
        # is a malformed layer line, never silently skipped.
        first_no, first = head[0][0], head[0][1].split()
        second = head[1][1].split() if len(head) > 1 else []
        count_tok = second[0] if len(second) == 1 else ""
        count_ok = count_tok.isascii() and count_tok.isdigit() and len(count_tok) <= 12
        if not (first[0][:1].isalpha() and first[0].upper() == first[0] and count_ok):
            raise InputError(f"{_TWELVE_FIELDS}; found {len(first)} (a header is a policy "
                             "line such as DATA followed by the layer count)",
                             source=source, field=f"line {first_no}")
        declared = int(count_tok)
        body_from = head[1][0]
    body = raw[body_from:]
    texts = [t for t in [content[r] for r in body] if t]
    if not texts:
        raise InputError("no layer lines", source=source)

    def line_of(t: str) -> int:  # the first line holding ``t``, for an error's position
        return body_from + 1 + next(j for j, r in enumerate(body) if content[r] == t)

    layer_of: dict[str, Layer] = {}
    seen: dict[tuple[str, ...], tuple[dict[str, Phase], float]] = {}
    same_line: dict[tuple[str, ...], Layer] = {}  # the same fields: the same layer
    for line in dict.fromkeys(texts):
        f = line.split()
        whole = tuple(f)
        layer = same_line.get(whole)
        if layer is None:
            known = seen.get(whole[1:])
            if known is None:
                try:
                    known = seen[whole[1:]] = _parse_fields(f, groups, source)
                except InputError as exc:
                    raise InputError(exc.message, source=source,
                                     field=f"line {line_of(line)}") from None
            phases, update_ns = known
            layer = same_line[whole] = Layer(
                name=f[0], forward=phases["forward"], input_grad=phases["input_grad"],
                weight_grad=phases["weight_grad"], count=1, update_s=update_ns * 1e-9)
        layer_of[line] = layer
    layers = [layer_of[t] for t in texts]
    if declared is not None and declared != len(layers):
        raise InputError(f"header declares {declared} layers, the file has {len(layers)}",
                         source=source)
    return Workload(name, tuple(layers), dict(groups))


def read_astra_sim(path: str | Path, groups: Mapping[str, tuple[int, ...]],
                   name: str | None = None, *, cache: ParseCache | None = None) -> Workload:
    """Read an ASTRA-sim 1.0 workload file (see :func:`parse_astra_sim`); with ``cache`` (the
    current load's :class:`~libra_opt.io.files.ParseCache`) a file already read with the
    same groups is neither read nor parsed again."""
    p = Path(path)
    label = name or p.stem
    if cache is None:
        return parse_astra_sim(read_text(p), label, groups, source=str(p))
    key = tuple(sorted((str(k), tuple(v)) for k, v in groups.items()))
    wl = cache.get("astra_sim", p, lambda: parse_astra_sim(read_text(p, cache=cache), label,
                                                            groups, source=str(p)), key)
    return wl if wl.name == label else replace(wl, name=label)


def _fmt(x: float) -> str:
    r = round(x)
    return str(int(r)) if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else repr(float(x))


def write_astra_sim(workload: Workload, path: str | Path, header: bool = False
                    ) -> dict[str, tuple[int, ...]]:
    """Write ``workload`` as ASTRA-sim 1.0 text (layers with ``count > 1`` expanded, times in
    ns), once :func:`check_exportable` (without merging) passed; phase name -> span of the
    group its collectives use (for the communicator file)."""
    w = check_exportable(workload, merge=False)
    out = []
    for layer in w.layers:
        fields = [layer.name, "-1"]
        for _, phase in layer.phases():
            fields.append(_fmt(phase.compute_s * 1e9))
            if phase.collectives:
                c = phase.collectives[0]
                fields += [_COMM_OUT[c.kind], _fmt(c.size_bytes)]
            else:
                fields += ["NONE", "0"]
        fields.append(_fmt(layer.update_s * 1e9))
        out.extend([" ".join(fields)] * layer.count)
    text = "\n".join(out) + "\n"
    if header:
        text = f"HYBRID_CUSTOMIZED\n{len(out)}\n" + text
    write_text_atomic(path, text)
    return {s.name: w.groups[s.phase.collectives[0].group] for s in walk_phases(w)
            if s.phase.collectives}


def merge_phase_collectives(workload: Workload) -> Workload:
    """Merge collectives of the same kind and group within a phase into one.

    Per-NPU traffic is linear in the size, so the merged collective moves exactly the same
    bytes; only latency terms (one per collective) differ.

    Examples
    --------
    >>> from libra_opt.traffic.workload import Layer
    >>> w = Workload("w", (Layer("l", Phase(0.0, (Collective("all_reduce", 1.0, "tp"),
    ...                                           Collective("all_reduce", 2.0, "tp")))),),
    ...              {"tp": (2,)})
    >>> merge_phase_collectives(w).layers[0].forward.collectives
    (Collective(kind='all_reduce', size_bytes=3.0, group='tp'),)
    """

    def merged(phase: Phase) -> Phase:
        sizes: dict[tuple[CollectiveKind, str], float] = {}
        for c in phase.collectives:
            sizes[(c.kind, c.group)] = sizes.get((c.kind, c.group), 0.0) + c.size_bytes
        return Phase(phase.compute_s, tuple(Collective(k, s, g) for (k, g), s in sizes.items()))

    return replace(workload, layers=tuple(
        replace(layer, forward=merged(layer.forward), input_grad=merged(layer.input_grad),
                weight_grad=merged(layer.weight_grad)) for layer in workload.layers))


def check_exportable(workload: Workload | GeneratedWorkload, merge: bool = True) -> Workload:
    """The workload as ASTRA-sim 1.0 text will hold it (same-kind, same-group collectives of
    a phase merged when ``merge``), or :class:`InputError` saying why the format cannot: it
    has one collective per phase, one communicator group per phase, no point-to-point
    transfers, and no overlap form (which collectives hide behind which compute).

    Examples
    --------
    >>> from libra_opt.traffic.workload import Collective, Layer, Phase
    >>> pp = Workload("w", (Layer("l", Phase(1.0, (Collective("p2p", 1e6, "pp"),))),),
    ...               {"pp": (2,)})
    >>> check_exportable(pp)
    Traceback (most recent call last):
    ...
    libra_opt.errors.InputError: workload: layer 'l', forward: point-to-point transfers (pipeline parallelism) have no ASTRA-sim 1.0 text form
    """
    w = workload.workload if isinstance(workload, GeneratedWorkload) else workload
    if w.overlap_form:
        raise InputError(
            f"workload {w.name!r} is in overlap form (tp_comm_overlap or "
            "dp_comm_overlap): ASTRA-sim 1.0 text cannot say which collectives hide behind "
            "which compute; generate it without those options to export it", field="workload")
    if merge:
        w = merge_phase_collectives(w)
    used: dict[str, tuple[str, str]] = {}
    for step in walk_phases(w):
        layer, pname, phase = step.layer, step.name, step.phase
        kinds = [f"{c.kind} on {c.group}" for c in phase.collectives]
        if len(kinds) > 1:
            raise InputError(f"layer {layer.name!r}, {pname}: {', '.join(kinds)}; ASTRA-sim "
                             "1.0 text holds one collective per phase", field="workload")
        for c in phase.collectives:
            if c.kind == "p2p":
                raise InputError(f"layer {layer.name!r}, {pname}: point-to-point transfers "
                                 "(pipeline parallelism) have no ASTRA-sim 1.0 text form",
                                 field="workload")
            first = used.setdefault(pname, (layer.name, c.group))
            if first[1] != c.group:
                raise InputError(
                    f"{pname} uses group {first[1]!r} (layer {first[0]!r}) and {c.group!r} "
                    f"(layer {layer.name!r}); ASTRA-sim 1.0 has one communicator group "
                    "per phase", field="workload")
    return w


def export_astra_sim(workload: Workload | GeneratedWorkload, path: str | Path,
                     communicator_path: str | Path | None = None, merge: bool = True
                     ) -> dict[str, tuple[int, ...]]:
    """Write ASTRA-sim 1.0 workload text with its header to ``path``, and the LIBRA
    communicator YAML to ``communicator_path`` if given, once :func:`check_exportable` (with
    ``merge``) passed; phase -> span of the group its collectives use."""
    w = check_exportable(workload, merge)  # refuses before anything is written
    spans = write_astra_sim(w, path, header=True)
    if communicator_path is not None:
        ones = (1,) * len(next(iter(w.groups.values())))
        write_libra_communicator({p: spans.get(p, ones) for p in PHASES}, communicator_path)
    return spans
