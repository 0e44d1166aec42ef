"""A layered (Sugiyama-style) layout of a directed graph, left to right, computed in
plain Python: no JavaScript library, no external request.

1. Loops: a depth-first search from the entry nodes, in the pipeline's order, marks
   each edge that closes a cycle as a back edge. Back edges take no part in layering;
   they are drawn below the graph, each in a lane of its own, so they cross no node.
2. Layers: longest path over the remaining (acyclic) edges: a node sits one layer to
   the right of its furthest predecessor.
3. Edges over more than one layer get a chain of dummy nodes, one per layer crossed.
4. Crossings: barycenter sweeps (down, then up), keeping the order with the fewest
   crossings seen.
5. Coordinates: layers are columns; nodes stacked in their order and centred.

`layout()` is pure and cached per pipeline by the caller (web/offload.py); drawing the
run's state on top of it is web/graph.py's."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

GAP_X, GAP_Y, PAD, DUMMY_H, LANE = 84, 26, 24, 6, 18
SWEEPS = 8

Point = tuple[float, float]


@dataclass
class Placed:
    """Where the layout put everything (top-left corners), and each edge's route."""

    pos: dict[str, Point]
    size: dict[str, tuple[int, int]]
    layer: dict[str, int]
    routes: list[list[Point]]  # one per input edge, in order
    back: set[int]  # indexes of the edges drawn as loops below the graph
    label_at: list[Point]
    width: int
    height: int
    order: list[list[str]] = field(default_factory=list)  # layer by layer, dummies left out


def back_edges(nodes: list[str], edges: list[tuple[str, str]]) -> set[int]:
    """Indexes of the edges that close a cycle (found by an iterative DFS)."""
    out: dict[str, list[int]] = defaultdict(list)
    has_in = {dst for src, dst in edges if src != dst}
    for i, (src, _) in enumerate(edges):
        out[src].append(i)
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    back: set[int] = set()
    starts = [n for n in nodes if n not in has_in] + nodes
    for start in starts:
        if start in state:
            continue
        state[start] = 1
        stack: list[tuple[str, int]] = [(start, 0)]
        while stack:
            node, k = stack[-1]
            if k < len(out[node]):
                stack[-1] = (node, k + 1)
                i = out[node][k]
                dst = edges[i][1]
                if state.get(dst) == 1:
                    back.add(i)
                elif dst not in state:
                    state[dst] = 1
                    stack.append((dst, 0))
            else:
                state[node] = 2
                stack.pop()
    return back


def layers(nodes: list[str], edges: list[tuple[str, str]], back: set[int]) -> dict[str, int]:
    """Longest-path layering of the acyclic part (Kahn's order)."""
    preds: dict[str, list[str]] = defaultdict(list)
    succs: dict[str, list[str]] = defaultdict(list)
    indeg = dict.fromkeys(nodes, 0)
    for i, (src, dst) in enumerate(edges):
        if i in back or src == dst:
            continue
        succs[src].append(dst)
        preds[dst].append(src)
        indeg[dst] += 1
    layer = dict.fromkeys(nodes, 0)
    ready = deque(n for n in nodes if indeg[n] == 0)
    while ready:
        node = ready.popleft()
        for nxt in succs[node]:
            layer[nxt] = max(layer[nxt], layer[node] + 1)
            indeg[nxt] -= 1
            if indeg[nxt] == 0:
                ready.append(nxt)
    return layer


def _crossings(order: list[list[str]], down: dict[str, list[str]]) -> int:
    """Edge crossings between adjacent layers: inversions, counted in O(E log V)."""
    total = 0
    for left, right in pairwise(order):
        at = {n: i for i, n in enumerate(right)}
        pairs = sorted((i, at[d]) for i, n in enumerate(left) for d in down.get(n, ()) if d in at)
        tree = [0] * (len(right) + 1)  # a Fenwick tree of the targets seen so far
        for seen, (_, j) in enumerate(pairs):
            k, below = j + 1, 0
            while k > 0:
                below += tree[k]
                k -= k & -k
            total += seen - below  # earlier edges into a target below this one
            k = j + 1
            while k <= len(right):
                tree[k] += 1
                k += k & -k
    return total


def _sweep(order: list[list[str]], near: dict[str, list[str]], rows: range) -> None:
    for r in rows:
        ref = order[r - 1] if rows.step > 0 else order[r + 1]
        at = {n: i for i, n in enumerate(ref)}

        def centre(item: tuple[int, str], at: dict[str, int] = at) -> float:
            i, node = item
            seen = [at[n] for n in near.get(node, ()) if n in at]
            return sum(seen) / len(seen) if seen else float(i)

        order[r] = [n for _, n in sorted(enumerate(order[r]), key=centre)]


def reduce_crossings(order: list[list[str]], down: dict[str, list[str]]) -> list[list[str]]:
    up: dict[str, list[str]] = defaultdict(list)
    for src, dsts in down.items():
        for dst in dsts:
            up[dst].append(src)
    best, fewest = [list(o) for o in order], _crossings(order, down)
    for _ in range(SWEEPS):
        if fewest == 0:
            break
        _sweep(order, up, range(1, len(order)))
        _sweep(order, down, range(len(order) - 2, -1, -1))
        now = _crossings(order, down)
        if now < fewest:
            best, fewest = [list(o) for o in order], now
    return best


def layout(
    nodes: list[str], sizes: dict[str, tuple[int, int]], edges: list[tuple[str, str]]
) -> Placed:
    """Lay `nodes` (of `sizes`) and `edges` out left to right."""
    back = back_edges(nodes, edges)
    layer = layers(nodes, edges, back)
    # dummy chains for the forward edges that cross layers
    chains: dict[int, list[str]] = {}
    down: dict[str, list[str]] = defaultdict(list)
    rank = dict(layer)
    for i, (src, dst) in enumerate(edges):
        if i in back or src == dst:
            continue
        chain = [src]
        for k in range(layer[src] + 1, layer[dst]):
            dummy = f"\0{i}.{k}"
            rank[dummy] = k
            chain.append(dummy)
        chain.append(dst)
        chains[i] = chain
        for a, b in pairwise(chain):
            down[a].append(b)
    order: list[list[str]] = [[] for _ in range(max(rank.values(), default=0) + 1)]
    for node in sorted(rank, key=_first_seen(nodes, chains)):
        order[rank[node]].append(node)
    order = reduce_crossings(order, down)
    return _place(nodes, sizes, edges, back, layer, order, chains)


def _first_seen(nodes: list[str], chains: dict[int, list[str]]) -> Callable[[str], int]:
    seen = {n: i for i, n in enumerate(nodes)}
    for i, chain in chains.items():
        for dummy in chain[1:-1]:
            seen[dummy] = seen[chain[0]] * 1000 + i
    return seen.__getitem__


def _place(
    nodes: list[str],
    sizes: dict[str, tuple[int, int]],
    edges: list[tuple[str, str]],
    back: set[int],
    layer: dict[str, int],
    order: list[list[str]],
    chains: dict[int, list[str]],
) -> Placed:
    size = {n: sizes[n] for n in nodes}
    col_w = [max((size[n][0] for n in col if n in size), default=0) for col in order]
    col_h = [
        sum(size[n][1] if n in size else DUMMY_H for n in col) + GAP_Y * max(len(col) - 1, 0)
        for col in order
    ]
    tall = max(col_h, default=0)
    pos: dict[str, Point] = {}
    x = float(PAD)
    for c, col in enumerate(order):
        y = PAD + (tall - col_h[c]) / 2
        for n in col:
            w, h = size.get(n, (0, DUMMY_H))
            pos[n] = (x + (col_w[c] - w) / 2, y)
            y += h + GAP_Y
        x += col_w[c] + GAP_X
    width = int(x - GAP_X + PAD)
    bottom = PAD + tall
    routes, labels = _routes(edges, back, chains, pos, size, bottom)
    height = int(bottom + PAD + LANE * (len(back) + (1 if back else 0)))
    kept = [[n for n in col if n in size] for col in order]
    return Placed(
        {n: pos[n] for n in nodes}, size, layer, routes, back, labels, width, height, kept
    )


def _ports(
    edges: list[tuple[str, str]], chains: dict[int, list[str]], pos: dict[str, Point]
) -> tuple[dict[int, float], dict[int, float]]:
    """Where each forward edge leaves its source and enters its target: spread over
    the node's side, in the order of the other ends, so they do not cross there."""
    outs: dict[str, list[int]] = defaultdict(list)
    ins: dict[str, list[int]] = defaultdict(list)
    for i in chains:
        outs[edges[i][0]].append(i)
        ins[edges[i][1]].append(i)
    leave: dict[int, float] = {}
    enter: dict[int, float] = {}
    for group, which, into in ((outs, 1, leave), (ins, -2, enter)):
        for _node, idx in group.items():
            idx.sort(key=lambda i: pos[chains[i][which]][1])
            for k, i in enumerate(idx):
                into[i] = (k + 1) / (len(idx) + 1)
    return leave, enter


def _routes(
    edges: list[tuple[str, str]],
    back: set[int],
    chains: dict[int, list[str]],
    pos: dict[str, Point],
    size: dict[str, tuple[int, int]],
    bottom: float,
) -> tuple[list[list[Point]], list[Point]]:
    leave, enter = _ports(edges, chains, pos)
    routes: list[list[Point]] = []
    labels: list[Point] = []
    lane = 0
    for i, (src, dst) in enumerate(edges):
        (sx, sy), (sw, sh) = pos[src], size[src]
        (dx, dy), (dw, dh) = pos[dst], size[dst]
        if i in chains:
            pts = [(sx + sw, sy + sh * leave[i])]
            pts += [(pos[d][0], pos[d][1] + DUMMY_H / 2) for d in chains[i][1:-1]]
            pts.append((dx, dy + dh * enter[i]))
            a, b = pts[0], pts[1]
            labels.append(((a[0] + b[0]) / 2, (a[1] + b[1]) / 2 - 4))
        else:  # a loop: down from the source, along a lane below the graph, up into the target
            lane += 1
            y = bottom + LANE * lane
            shift = 8 * (lane % 4)
            a = (sx + sw / 2 + shift, sy + sh)
            b = (dx + dw / 2 - shift, dy + dh)
            pts = [a, (a[0], y), (b[0], y), b]
            labels.append(((a[0] + b[0]) / 2, y - 4))
        routes.append(pts)
    return routes, labels


def path_d(points: list[Point], loop: bool) -> str:
    """SVG path data: smooth horizontal curves through a forward edge's points; a
    loop's square route with rounded corners."""
    (x0, y0), rest = points[0], points[1:]
    d = [f"M{x0:.1f},{y0:.1f}"]
    if loop:
        r = 8.0
        (ax, ay), (bx, by), (cx, cy) = points[1], points[2], points[3]
        d.append(f"L{ax:.1f},{ay - r:.1f} Q{ax:.1f},{ay:.1f} {ax - r:.1f},{ay:.1f}")
        d.append(f"L{bx + r:.1f},{by:.1f} Q{bx:.1f},{by:.1f} {bx:.1f},{by - r:.1f}")
        d.append(f"L{cx:.1f},{cy:.1f}")
        return " ".join(d)
    px, py = x0, y0
    for x, y in rest:
        mid = (x - px) / 2
        d.append(f"C{px + mid:.1f},{py:.1f} {x - mid:.1f},{y:.1f} {x:.1f},{y:.1f}")
        px, py = x, y
    return " ".join(d)
