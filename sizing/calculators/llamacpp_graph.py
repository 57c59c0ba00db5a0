"""llama.cpp's compute buffer: the peak of ggml's graph allocator over the worst-case graph of a micro-batch.

llama.cpp reserves its compute buffer once, at start-up (`llama_context::sched_reserve`): it builds the graph
of one micro-batch of `n_ubatch` tokens against the whole KV cache, with `n_outputs` = min(`n_ubatch`,
`n_outputs_max`) rows of logits (`n_outputs_max` is `n_batch` unless the caller sets it: the library's
default, Ollama and llama-cpp-python; llama-server since June 2026 sets it to its slots), and lets ggml-alloc
(`ggml_gallocr`) place every intermediate tensor in one buffer per device. The allocator walks the nodes in
order, puts each new tensor in the smallest free block that holds it (else at the end), lets an element-wise
op write over its only input, and frees a tensor once its last reader has run. The buffer is the highest
offset it reached: the largest set of tensors alive at once, plus the holes no later tensor fitted.

This module rebuilds that walk as `src/llama-graph.cpp` builds a decoder (`build_norm`, `build_attn` with and
without flash attention, `build_ffn`, `build_moe_ffn`, the output head), layer after layer, and runs
`ggml/src/ggml-alloc.c`'s rules over it (ggml-org/llama.cpp, the code of mid-2026):

- the device's split starts with copies of its inputs from the host (`ggml_backend_sched`): the token
  embeddings looked up on the CPU (hidden × tokens, f32), the positions, the cache's row indices and the KQ
  mask (cache cells × tokens), each freed after its last reader;
- with flash attention the mask is f16 (`build_attn_inp_kq_mask`; earlier builds, which Ollama's runner still
  logs, made it f32 and cast it to f16 on the device) and each layer writes one head_dim × heads × tokens f32
  result; without it each layer multiplies K by Q into the scores (cache cells × tokens × heads, f32), takes
  the softmax in place and multiplies by V;
- the MLP's up and gate (intermediate × tokens each) and their SwiGLU product, then the down projection; a
  mixture of experts: the router, the chosen experts' up, gate and product (expert intermediate × experts per
  token × tokens) and their down projections (hidden × experts per token × tokens), summed;
- after the last layer only the rows that give logits go on, then the output norm and the logits
  (vocabulary × outputs, f32), the graph's outputs, never freed.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

ALIGNMENT = 128  # ggml-cuda's buffer alignment
F32, F16, I32, I64 = 4, 2, 4, 8
_END = 1 << 62  # the last free block runs to the end of the address space


class Allocator:
    """ggml-alloc's `ggml_dyn_tallocr`: best fit among the free blocks but the last, else the last one."""

    def __init__(self) -> None:
        self.blocks: list[list[int]] = [[0, _END]]  # [offset, size], sorted by offset
        self.peak = 0

    def alloc(self, size: int) -> int:
        size = -(-size // ALIGNMENT) * ALIGNMENT
        best, best_size = -1, _END
        for index, (_, block_size) in enumerate(self.blocks[:-1]):
            if size <= block_size <= best_size:
                best, best_size = index, block_size
        if best == -1:
            best = len(self.blocks) - 1
        block = self.blocks[best]
        offset = block[0]
        block[0] += size
        block[1] -= size
        if block[1] == 0:
            del self.blocks[best]
        self.peak = max(self.peak, offset + size)
        return offset

    def free(self, offset: int, size: int) -> None:
        size = -(-size // ALIGNMENT) * ALIGNMENT
        for index, block in enumerate(self.blocks):
            if block[0] + block[1] == offset:
                block[1] += size
                if index + 1 < len(self.blocks) and block[0] + block[1] == self.blocks[index + 1][0]:
                    block[1] += self.blocks[index + 1][1]
                    del self.blocks[index + 1]
                return
            if offset + size == block[0]:
                block[0] = offset
                block[1] += size
                if index > 0 and self.blocks[index - 1][0] + self.blocks[index - 1][1] == block[0]:
                    self.blocks[index - 1][1] += block[1]
                    del self.blocks[index]
                return
        position = 0
        while position < len(self.blocks) and self.blocks[position][0] < offset:
            position += 1
        self.blocks.insert(position, [offset, size])


@dataclass
class _Node:
    size: int  # bytes; 0 for a view
    srcs: tuple[int, ...]
    inplace: bool = False  # an element-wise op ggml-alloc may write over its input (ggml_op_can_inplace)
    view_of: int | None = None  # a view (reshape, permute, get_rows' output is not one) of this node
    output: bool = False
    external: bool = False  # memory outside the compute buffer (the weights, the KV cache)
    children: int = 0
    views: int = 0
    offset: int | None = None
    allocated: bool = False


@dataclass
class _Graph:
    nodes: list[_Node] = field(default_factory=list)

    def inputs(self, size: int, copies: int) -> int:
        """A copy of an input from the host at the split's start; under pipeline parallelism the scheduler
        keeps `copies` of each, marked input and output so that the allocator never frees them."""
        for _ in range(copies - 1):
            self.add(size, output=True)
        return self.add(size, output=copies > 1)

    def add(self, size: int, *srcs: int, inplace: bool = False, output: bool = False) -> int:
        self.nodes.append(_Node(size, tuple(s for s in srcs if s >= 0), inplace=inplace, output=output))
        return len(self.nodes) - 1

    def view(self, of: int) -> int:
        self.nodes.append(_Node(0, (of,), view_of=of))
        return len(self.nodes) - 1

    def external(self, *srcs: int) -> int:
        """Memory outside the buffer: the weights, the KV cache, a write into the cache (`ggml_set_rows`)."""
        self.nodes.append(_Node(0, srcs, external=True))
        return len(self.nodes) - 1

    def peak(self) -> int:
        """Run ggml-alloc's `ggml_gallocr_alloc_graph_impl` over the nodes: the buffer's size."""
        nodes = self.nodes
        for node in nodes:
            if node.view_of is not None:
                nodes[node.view_of].views += 1
            for src in node.srcs:
                nodes[src].children += 1
        allocator = Allocator()

        def allocate(index: int) -> None:
            node = nodes[index]
            if node.allocated or node.offset is not None or node.external or node.view_of is not None:
                return
            if node.inplace:
                for src in node.srcs:
                    parent = nodes[src]
                    if parent.output or parent.external or parent.children != 1 or parent.views != 0:
                        continue
                    if parent.view_of is not None:
                        owner = nodes[parent.view_of]
                        if (owner.views == 1 and owner.children == 0 and owner.allocated
                                and owner.size == node.size and not owner.output):
                            node.offset, node.allocated = owner.offset, True
                            owner.allocated = False
                            return
                        continue
                    if parent.allocated and parent.size == node.size:
                        node.offset, node.allocated = parent.offset, True
                        parent.allocated = False
                        return
            node.offset = allocator.alloc(node.size)
            node.allocated = True

        def release(index: int) -> None:
            node = nodes[index]
            if node.output or not node.allocated or node.offset is None:
                return
            allocator.free(node.offset, node.size)
            node.allocated = False

        for index, node in enumerate(nodes):
            for src in node.srcs:
                allocate(src)
            allocate(index)
            for src in node.srcs:
                parent = nodes[src]
                parent.children -= 1
                if parent.children == 0 and parent.views == 0:
                    if parent.view_of is not None:
                        owner = nodes[parent.view_of]
                        owner.views -= 1
                        if owner.views == 0 and owner.children == 0:
                            release(parent.view_of)
                    else:
                        release(src)
        return allocator.peak


@dataclass(frozen=True)
class GraphShape:
    """What the worst-case graph of one micro-batch depends on, read from the model and the settings."""

    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    layers: tuple[int, ...]  # each layer's cache cells (a sliding-window layer keeps fewer)
    intermediate: int  # the dense MLP's width (0: none)
    experts: int = 0
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0
    qk_norm: bool = False
    post_norms: bool = False  # Gemma's norms after attention and after the MLP
    tokens: int = 512  # n_ubatch, at most the cache
    outputs: int = 512  # the rows that give logits (n_outputs of the reservation)
    flash_attention: bool = True
    output_layer: bool = True  # this device holds the output head and computes the logits
    mask_cast: bool = False  # the earlier graph: an f32 mask cast to f16 on the device for flash attention
    copies: int = 1  # copies of each input the scheduler keeps (4 under pipeline parallelism, never freed)


def _norm(graph: _Graph, x: int, size: int) -> int:
    return graph.add(size, graph.add(size, x, inplace=True), inplace=True)  # rms_norm, then × weight in place


def _attention(graph: _Graph, shape: GraphShape, x: int, cells: int, inputs: dict[str, int]) -> int:
    tokens = shape.tokens
    q_size = shape.heads * shape.head_dim * tokens * F32
    kv_size = shape.kv_heads * shape.head_dim * tokens * F32
    cur = _norm(graph, x, shape.hidden * tokens * F32)
    q = graph.add(q_size, cur)
    if shape.qk_norm:
        q = graph.add(q_size, graph.view(q), inplace=True)
    q = graph.add(q_size, graph.view(q), inputs["pos"], inplace=True)  # rope
    k = graph.add(kv_size, cur)
    if shape.qk_norm:
        k = graph.add(kv_size, graph.view(k), inplace=True)
    k = graph.add(kv_size, graph.view(k), inputs["pos"], inplace=True)
    v = graph.add(kv_size, cur)
    graph.external(k, inputs["k_idxs"])  # set_rows into the cache
    graph.external(graph.view(v), inputs["v_idxs"])
    cache_k, cache_v = graph.external(), graph.external()
    if shape.flash_attention:
        mask = inputs[f"mask{cells}"]
        if shape.mask_cast:
            if f"cast{cells}" not in inputs:
                # ggml_cast, read by every layer
                inputs[f"cast{cells}"] = graph.add(cells * tokens * F16, mask)
            mask = inputs[f"cast{cells}"]
        out = graph.add(q_size, graph.view(q), cache_k, cache_v, mask)
    else:
        scores = graph.add(cells * tokens * shape.heads * F32, cache_k, graph.view(q))
        scores = graph.add(cells * tokens * shape.heads * F32, scores, inputs[f"mask{cells}"], inplace=True)
        kqv = graph.add(q_size, cache_v, scores)
        out = graph.add(q_size, graph.view(kqv))  # ggml_cont of the permuted heads
    out = graph.add(shape.hidden * tokens * F32, graph.view(out))  # wo
    if shape.post_norms:
        out = _norm(graph, out, shape.hidden * tokens * F32)
    return out


def _mlp(graph: _Graph, shape: GraphShape, x: int, tokens: int) -> int:
    hidden = shape.hidden * tokens * F32
    cur = _norm(graph, x, hidden)
    parts = []
    if shape.experts:
        scores = graph.add(shape.experts * tokens * F32, cur)  # the router
        probs = graph.add(shape.experts * tokens * F32, scores, inplace=True)  # softmax
        order = graph.add(shape.experts * tokens * I32, probs)  # argsort, the top k a view of it
        chosen = graph.view(order)
        weights = graph.add(shape.experts_per_token * tokens * F32, graph.view(probs), chosen)
        width = shape.expert_intermediate * shape.experts_per_token * tokens * F32
        flat = graph.view(cur)
        up = graph.add(width, flat, chosen)
        gate = graph.add(width, flat, chosen)
        product = graph.add(width, gate, up)
        experts = graph.add(shape.hidden * shape.experts_per_token * tokens * F32, product, chosen)
        experts = graph.add(shape.hidden * shape.experts_per_token * tokens * F32, experts, weights,
                            inplace=True)
        total = graph.add(hidden, graph.view(experts), graph.view(experts))
        for _ in range(shape.experts_per_token - 2):
            total = graph.add(hidden, total, graph.view(experts), inplace=True)
        parts.append(total)
    for width in (shape.intermediate, shape.shared_intermediate):
        if not width:
            continue
        up = graph.add(width * tokens * F32, cur)
        gate = graph.add(width * tokens * F32, cur)
        product = graph.add(width * tokens * F32, gate, up)  # ggml_swiglu_split (not in place)
        parts.append(graph.add(hidden, product))
    out = parts[0]
    for part in parts[1:]:
        out = graph.add(hidden, out, part, inplace=True)
    if shape.post_norms:
        out = _norm(graph, out, hidden)
    return out


def build_graph(shape: GraphShape) -> _Graph:
    """The device's split of the worst-case graph, node by node in llama.cpp's order."""
    graph = _Graph()
    tokens = shape.tokens
    v_rows = 1 if shape.flash_attention else shape.kv_heads * shape.head_dim  # a transposed V: one per value
    copies = shape.copies
    inputs = {"embd": graph.inputs(shape.hidden * tokens * F32, copies),
              "pos": graph.inputs(tokens * I32, copies),
              "k_idxs": graph.inputs(tokens * I64, copies),
              "v_idxs": graph.inputs(tokens * v_rows * I64, copies)}
    f16_mask = shape.flash_attention and not shape.mask_cast
    for cells in dict.fromkeys(shape.layers):  # f16 for flash attention, which reads it as it is
        inputs[f"mask{cells}"] = graph.inputs(cells * tokens * (F16 if f16_mask else F32), copies)
    if shape.output_layer:
        inputs["out_ids"] = graph.inputs(shape.outputs * I32, copies)
    x = inputs["embd"]
    last = len(shape.layers) - 1
    for index, cells in enumerate(shape.layers):
        residual = x
        attended = _attention(graph, shape, x, cells, inputs)
        rows = tokens
        if index == last and shape.output_layer:
            attended = graph.add(shape.hidden * shape.outputs * F32, attended, inputs["out_ids"])  # get_rows
            residual = graph.add(shape.hidden * shape.outputs * F32, residual, inputs["out_ids"])
            rows = shape.outputs
        mixed = graph.add(shape.hidden * rows * F32, attended, residual, inplace=True)
        x = graph.add(shape.hidden * rows * F32, _mlp(graph, shape, mixed, rows), mixed, inplace=True)
    if shape.output_layer:
        size = shape.hidden * shape.outputs * F32
        norm = graph.add(size, graph.add(size, x, inplace=True), inplace=True, output=True)
        graph.add(shape.vocab * shape.outputs * F32, norm, output=True)
    return graph


def _stranded_logits(shape: GraphShape) -> int:
    """The logits on top of the split's input copies: the final norm can land in the smallest hole that holds
    it, right above the copies' freed space, and the logits, too large for any hole, go above it."""
    if not shape.output_layer:
        return 0
    graph = build_graph(shape)
    copies = 0
    for node in graph.nodes:
        if node.srcs or node.external or node.view_of is not None:
            break
        copies += -(-node.size // ALIGNMENT) * ALIGNMENT
    return copies + (shape.hidden + shape.vocab) * shape.outputs * F32


def _period(layers: tuple[int, ...]) -> int:
    """The shortest run of layers that repeats (sliding-window patterns): the whole stack if none does."""
    for period in range(1, len(layers) + 1):
        if all(layers[index] == layers[index + period] for index in range(len(layers) - period)):
            return period
    return len(layers)


def shortened(shape: GraphShape) -> GraphShape:
    """The same graph with the middle layers left out, whole periods of the pattern at a time: every layer of
    a period allocates and frees the same tensors, so once the first periods have run the allocator starts
    each period as it started the one before, and the peak of the rest repeats. Two periods at each end
    stay."""
    layers = shape.layers
    period = _period(layers)
    drop = max(0, (len(layers) - 4 * period) // period) * period
    if not drop:
        return shape
    return replace(shape, layers=layers[:2 * period] + layers[2 * period + drop:])


@functools.lru_cache(maxsize=512)
def compute_buffer_bytes(shape: GraphShape) -> int:
    """The device's compute buffer: the allocator's peak over the worst-case graph of either generation of the
    mask (f16 as built now, f32 cast on the device as before), and no less than the logits stranded above the
    input copies (where the allocator may place them; Ollama's 32k log shows it)."""
    short = shortened(shape)
    earlier = replace(short, mask_cast=True)
    return max(build_graph(short).peak(), build_graph(earlier).peak(), _stranded_logits(earlier))
