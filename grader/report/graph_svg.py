"""Layout of a graph figure for inline SVG: columns by depth, edges as curves, long edges in lanes.

Only geometry and short labels are computed here; the template (``_graph.html.j2``) writes the
SVG, so every student-controlled string passes through Jinja's escaping. Colours come from the
page's CSS variables: the same picture works in light, dark and print.
"""

from __future__ import annotations

from dataclasses import dataclass

from grader.results import FigureEdge, FigureNode, GraphFigure

NODE_W = 146
LINE_H = 16
NODE_PAD = 8
COL_GAP = 76
ROW_GAP = 18
MARGIN = 12
LANE_GAP = 12
MAX_LABEL = 18  # characters that fit on one node line at the figure's font size

EDGE_LABELS = {
    "lost": "lost {value}",
    "twice": "twice {value}",
    "missing": "not in _prev",
    "extra": "in _prev, not an input",
}


@dataclass(frozen=True)
class NodeLine:
    text: str
    css: str  # "" | "bad" | "muted" | "head"


@dataclass(frozen=True)
class PlacedNode:
    node: FigureNode
    x: float
    y: float
    height: float
    lines: tuple[NodeLine, ...]
    bad: bool
    visit_label: str  # "3" or "2,5"; "" when backward() never ran it (or the order was not recorded)
    title: str  # full text for the tooltip (lines may be cut)


@dataclass(frozen=True)
class PlacedEdge:
    edge: FigureEdge
    path: str
    label: str
    label_x: float
    label_y: float


@dataclass(frozen=True)
class Layout:
    width: float
    height: float
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]


def clip(text: str, limit: int = MAX_LABEL) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _lines(node: FigureNode) -> list[NodeLine]:
    head = f"{node.name} = {node.formula}" if node.formula else f"{node.name} (leaf)"
    lines = [NodeLine(clip(head), "head")]
    data_bad = node.data_ok is False
    grad_bad = node.grad_ok is False
    lines.append(NodeLine(clip(("\u2717 " if data_bad else "") + f"data {node.data}"), "bad" if data_bad else ""))
    if data_bad:
        lines.append(NodeLine(clip(f"  expected {node.data_expected}"), "muted"))
    if node.grad != "(not observed)" or node.grad_ok is not None:
        lines.append(NodeLine(clip(("\u2717 " if grad_bad else "") + f"grad {node.grad}"), "bad" if grad_bad else ""))
    if grad_bad:
        lines.append(NodeLine(clip(f"  expected {node.grad_expected}"), "muted"))
    if node.op_ok is False:
        lines.append(NodeLine(clip(f"\u2717 _op {node.observed_op}"), "bad"))
    if node.parents_note:
        lines.append(NodeLine("\u2717 _prev is wrong", "bad"))
    return lines


@dataclass(frozen=True)
class _Links:
    """Each node's real inputs and the nodes built from it (extra _prev entries do not place nodes)."""

    inputs: dict[str, list[str]]
    users: dict[str, list[str]]


def _links(figure: GraphFigure) -> _Links:
    links = _Links({n.name: [] for n in figure.nodes}, {n.name: [] for n in figure.nodes})
    for edge in figure.edges:
        if edge.state != "extra":
            links.inputs[edge.target].append(edge.source)
            links.users[edge.source].append(edge.target)
    return links


def _depths(figure: GraphFigure, links: _Links) -> dict[str, int]:
    inputs = links.inputs
    depth: dict[str, int] = {}
    for node in figure.nodes:  # nodes come in program order: inputs before the nodes built from them
        depth[node.name] = 1 + max((depth.get(p, 0) for p in inputs[node.name]), default=-1)
    # Then move each node right, next to its first consumer: leaves sit beside the node that uses
    # them, and most edges span one column.
    for node in reversed(figure.nodes):
        users = [depth[t] for t in links.users[node.name]]
        if users:
            depth[node.name] = max(depth[node.name], min(users) - 1)
    return depth


def layout(figure: GraphFigure) -> Layout:
    links = _links(figure)
    depth = _depths(figure, links)
    columns: dict[int, list[FigureNode]] = {}
    for node in figure.nodes:
        columns.setdefault(depth[node.name], []).append(node)
    lines = {n.name: _lines(n) for n in figure.nodes}
    heights: dict[str, float] = {name: 2 * NODE_PAD + LINE_H * len(rows) for name, rows in lines.items()}
    # Long edges (skipping a column) run in lanes above the nodes, so they never cross a box.
    long_edges = [e for e in figure.edges if depth[e.target] - depth[e.source] != 1]
    top = MARGIN + LANE_GAP * len(long_edges) + (LANE_GAP if long_edges else 0)
    column_heights = {
        col: sum(heights[n.name] for n in nodes) + ROW_GAP * (len(nodes) - 1) for col, nodes in columns.items()
    }
    tallest = max(column_heights.values(), default=0)
    _untangle(columns, links)
    positions: dict[str, tuple[float, float]] = {}
    for col in sorted(columns):
        y = top + (tallest - column_heights[col]) / 2
        for node in columns[col]:
            positions[node.name] = (MARGIN + col * (NODE_W + COL_GAP), y)
            y += heights[node.name] + ROW_GAP
    placed = tuple(
        PlacedNode(
            node=n,
            x=positions[n.name][0],
            y=positions[n.name][1],
            height=heights[n.name],
            lines=tuple(lines[n.name]),
            bad=n.data_ok is False or n.grad_ok is False or n.op_ok is False or bool(n.parents_note),
            visit_label=",".join(str(v) for v in n.visits[:3]) + ("\u2026" if len(n.visits) > 3 else ""),
            title=_title(n),
        )
        for n in figure.nodes
    )
    edges = _edges(figure, positions, heights, depth, long_edges)
    width = 2 * MARGIN + (max(columns, default=0) + 1) * NODE_W + max(columns, default=0) * COL_GAP
    return Layout(width=width, height=top + tallest + MARGIN, nodes=placed, edges=edges)


def _untangle(columns: dict[int, list[FigureNode]], links: _Links) -> None:
    """Order each column by where its neighbours sit (a few barycentre sweeps), to avoid crossings."""
    rank: dict[str, float] = {}

    def measure() -> None:
        for nodes in columns.values():
            for i, node in enumerate(nodes):
                rank[node.name] = i - (len(nodes) - 1) / 2

    def sweep(cols: list[int], neighbours: dict[str, list[str]]) -> None:
        for col in cols:

            def key(node: FigureNode) -> float:
                around = neighbours[node.name]
                return sum(rank[n] for n in around) / len(around) if around else rank[node.name]

            columns[col].sort(key=key)
            measure()

    measure()
    ordered = sorted(columns)
    for _ in range(3):
        sweep(list(reversed(ordered))[1:], links.users)
        sweep(ordered[1:], links.inputs)


def _title(node: FigureNode) -> str:
    parts = [f"{node.name} = {node.formula}" if node.formula else f"{node.name}: a leaf"]
    parts.append(f"data {node.data}" + (f" (expected {node.data_expected})" if node.data_ok is False else ""))
    parts.append(f"grad {node.grad}" + (f" (expected {node.grad_expected})" if node.grad_ok is False else ""))
    if node.op_ok is False:
        parts.append(f"_op {node.observed_op}")
    if node.parents_note:
        parts.append(node.parents_note)
    if node.lost:
        parts.append(node.lost)
    return "\n".join(parts)


def _edges(
    figure: GraphFigure,
    positions: dict[str, tuple[float, float]],
    heights: dict[str, float],
    depth: dict[str, int],
    long_edges: list[FigureEdge],
) -> tuple[PlacedEdge, ...]:
    out = []
    fan_out: dict[str, list[FigureEdge]] = {}
    fan_in: dict[str, list[FigureEdge]] = {}
    for edge in figure.edges:
        fan_out.setdefault(edge.source, []).append(edge)
        fan_in.setdefault(edge.target, []).append(edge)
    # Attach each edge where its other end sits: edges into one box do not cross each other.
    for edges in fan_out.values():
        edges.sort(key=lambda e: (positions[e.target][1], e.slot))
    for edges in fan_in.values():
        edges.sort(key=lambda e: (positions[e.source][1], e.slot))
    for edge in figure.edges:
        sx0, sy0 = positions[edge.source]
        tx0, ty0 = positions[edge.target]
        # Spread several edges over a box side, so x * x shows two edges.
        outs, ins = fan_out[edge.source], fan_in[edge.target]
        sx = sx0 + NODE_W
        sy = sy0 + heights[edge.source] * (outs.index(edge) + 1) / (len(outs) + 1)
        tx = tx0
        ty = ty0 + heights[edge.target] * (ins.index(edge) + 1) / (len(ins) + 1)
        if edge in long_edges:
            lane = MARGIN + LANE_GAP * (long_edges.index(edge) + 1)
            if depth[edge.target] <= depth[edge.source]:
                sx = sx0 + NODE_W / 2  # a backward-pointing extra edge: leave from the top
                sy = sy0
            path = (
                f"M{sx:.1f},{sy:.1f} C{sx + 30:.1f},{sy:.1f} {sx + 30:.1f},{lane:.1f} {sx + 60:.1f},{lane:.1f} "
                f"L{tx - 60:.1f},{lane:.1f} C{tx - 30:.1f},{lane:.1f} {tx - 30:.1f},{ty:.1f} {tx - 2:.1f},{ty:.1f}"
            )
            label_x, label_y = (sx + tx) / 2, lane - 3.0
        else:
            mid = (sx + tx) / 2
            path = f"M{sx:.1f},{sy:.1f} C{mid:.1f},{sy:.1f} {mid:.1f},{ty:.1f} {tx - 2:.1f},{ty:.1f}"
            label_x, label_y = mid, min(sy, ty) - 5  # above the curve, clear of its neighbours
        template = EDGE_LABELS.get(edge.state, "")
        label = template.format(value=edge.contribution) if template else ""
        out.append(PlacedEdge(edge, path, label, label_x, label_y))
    return tuple(out)
