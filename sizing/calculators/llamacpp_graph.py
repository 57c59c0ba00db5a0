"""llama.cpp's compute buffer: the peak of ggml's graph allocator over the worst-case graph of a micro-batch.

llama.cpp reserves its compute buffer once, at start-up (`llama_context::sched_reserve`): it builds the graph
of one micro-batch of `n_ubatch` tokens against the whole KV cache, with `n_outputs` = min(`n_ubatch`,
`n_outputs_max`) rows of logits (`n_outputs_max` is `n_batch` unless the caller sets it, which llama-server
does from build b9460, to its slots: `llamacpp_builds`), and lets ggml-alloc
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
- with flash attention the mask is f16 (`build_attn_inp_kq_mask`, from build b9410; earlier builds, which
  Ollama's runner still logs, made it f32 and cast it to f16 on the device) and each layer writes one
  head_dim × heads × tokens f32
  result; without it each layer multiplies K by Q into the scores (cache cells × tokens × heads, f32), takes
  the softmax in place and multiplies by V (latent attention's V-less cache first copies V, a view of K,
  transposed: the latent of every cell);
- the MLP's up and gate (intermediate × tokens each) and their SwiGLU product, then the down projection; a
  mixture of experts: the router, the chosen experts' up, gate and product (expert intermediate × experts per
  token × tokens) and their down projections (hidden × experts per token × tokens), summed;
- after the last layer only the rows that give logits go on, then the output norm and the logits
  (vocabulary × outputs, f32), the graph's outputs, never freed.

A capacity search asks the same graph at dozens of cache lengths (each probe a new cache) and, where the
cache keeps a stream per slot, of micro-batches (each -np it probes reserves the micro-batch rounded up to a
multiple of -np, and from b9460 a row of logits per slot), so the walk is run with every size and offset
kept as a linear form of the graph's variables (`Linear`): the tokens, the rows of logits and each distinct
cache length's cells × tokens (and, where latent attention copies V, its cells alone: `_all_cells`; every
size is one of them times its bytes), and each comparison the
allocator makes is kept as the sign of a form (`Conditions`). Wherever the variables give every comparison
the same outcome the allocator takes the same path, its arithmetic only adds and subtracts sizes, and so
its peak is the same form: one walk answers a whole region of cache lengths and micro-batches exactly
(`_Region`), and a model's every length from one micro-batch to two million cells, at every -np, takes a
few dozen walks. Rounding to the alignment keeps a form linear where the bytes per unit are a multiple of
it (the cells × tokens are counted in units of 128 cells: a cache's lengths are multiples of 256); a tensor
whose are not (the positions, 4 bytes a token) is counted by a variable of its own, its aligned size, set
from the tokens; any other size keeps the region to the one point.
"""
from __future__ import annotations

import functools
import math
import operator
import threading
from dataclasses import dataclass, field, replace

ALIGNMENT = 128  # ggml-cuda's buffer alignment
F32, F16, I32, I64 = 4, 2, 4, 8
_END = 1 << 62  # the last free block runs to the end of the address space
MAX_REGIONS = 64  # regions kept per graph (`_regions`); an answer reaches a handful


class Linear:
    """A size or an offset in bytes as a function of the graph's variables (`_variables`): `value` is what it
    comes to at the values the graph was built for, `constant` what it comes to with every variable at 0,
    and `packed` the bytes it adds per unit of each variable, packed into one integer (`_packed`) so that
    the walk's additions, subtractions and comparisons of forms are those of integers; 0 for most."""

    __slots__ = ("constant", "packed", "value")

    def __init__(self, value: int, packed: int, constant: int) -> None:
        self.value, self.packed, self.constant = value, packed, constant

    def __add__(self, other: Linear) -> Linear:
        return Linear(self.value + other.value, self.packed + other.packed, self.constant + other.constant)

    def __sub__(self, other: Linear) -> Linear:
        return Linear(self.value - other.value, self.packed - other.packed, self.constant - other.constant)

    def __mul__(self, factor: int) -> Linear:
        return Linear(self.value * factor, self.packed * factor, self.constant * factor)

    __rmul__ = __mul__


# Bits per variable of a packed form: each term its own field, a signed number far inside it (a form's terms
# are bytes per unit of a variable, sums of a graph's sizes: under 2**50 for any model).
_FIELD = 128


def _packed(per_unit: tuple[int, ...]) -> int:
    """The terms (bytes per unit of each variable) as one integer: Σ term × 2**(_FIELD × index)."""
    packed = 0
    for term in reversed(per_unit):
        packed = (packed << _FIELD) + term
    return packed


@functools.lru_cache(maxsize=1 << 14)
def _unpacked(packed: int, count: int) -> tuple[int, ...]:
    """The `count` terms of a packed form (`_packed`), each read back as the signed number of its field."""
    terms = []
    for _ in range(count):
        term = packed & ((1 << _FIELD) - 1)
        if term >> (_FIELD - 1):
            term -= 1 << _FIELD
        terms.append(term)
        packed = (packed - term) >> _FIELD
    return tuple(terms)


@functools.lru_cache(maxsize=1 << 14)
def _signs(packed: int) -> tuple[bool, bool]:
    """Whether every term of a packed form is ≥ 0, and whether every one is ≤ 0 (the terms past the last
    that is not 0 are 0, which changes neither)."""
    least = most = 0
    while packed:
        term = packed & ((1 << _FIELD) - 1)
        if term >> (_FIELD - 1):
            term -= 1 << _FIELD
        least, most = min(least, term), max(most, term)
        packed = (packed - term) >> _FIELD
    return least >= 0, most <= 0


@functools.lru_cache(maxsize=1 << 14)
def _rounding(packed: int, count: int) -> tuple[int, int] | None:
    """How a size of these terms rounds up to the alignment (`Conditions.aligned`): (-1, 0) where every term
    is a multiple of it; (variable, bytes per unit) where one term alone is not; None otherwise."""
    terms = _unpacked(packed, count)
    if all(term % ALIGNMENT == 0 for term in terms):
        return -1, 0
    found = [(index, term) for index, term in enumerate(terms) if term]
    return found[0] if len(found) == 1 else None


class Conditions:
    """The comparisons one run of the allocator decided, each kept as the sign of a linear form of the
    variables, (constant, packed terms) (`Linear`); never one of two sizes that add the same per unit, which
    comes out the same whatever the values. Any values for which every one comes out as it did take the
    same path through the allocator, whose arithmetic is additions of sizes: its peak is then the same
    form of them."""

    def __init__(self, points: tuple[int, ...], aligned_by: dict[tuple[int, int], int] | None = None) -> None:
        self.points = points  # the variables' values the graph is built for (`_variables`)
        self.count = len(points)
        # (variable, bytes per unit of it): the variable that counts such a tensor's aligned size in units of
        # the alignment (`aligned`)
        self.aligned_by = aligned_by or {}
        self.at_least_zero: set[tuple[int, int]] = set()
        self.zero: set[tuple[int, int]] = set()
        self.not_zero: set[tuple[int, int]] = set()

    def form(self, value: int) -> Linear:
        return Linear(value, 0, value)

    def variable(self, index: int, per_unit: int) -> Linear:
        """`per_unit` bytes per unit of variable `index`, at the graph's values."""
        return Linear(per_unit * self.points[index], per_unit << (_FIELD * index), 0)

    def terms(self, form: Linear) -> tuple[int, ...]:
        """`form` as (constant, bytes per unit of each variable…)."""
        return (form.constant, *_unpacked(form.packed, self.count))

    def kept(self, kind: set[tuple[int, int]]) -> list[tuple[int, ...]]:
        """The forms of one kind of condition, each as (constant, bytes per unit of each variable…)."""
        return [(constant, *_unpacked(packed, self.count)) for constant, packed in kind]

    # Each comparison keeps the form whose sign it read, unless that sign is the same wherever the variables
    # are, all of them being counts (never negative): a form ≥ 0 whose constant and terms are all ≥ 0, a
    # form ≠ 0 whose terms are all ≥ 0 and constant > 0, or all ≤ 0 and constant < 0 (`_signs`).

    def le(self, a: Linear, b: Linear) -> bool:
        if a.value <= b.value:
            if a.packed != b.packed:  # b - a ≥ 0
                packed, constant = b.packed - a.packed, b.constant - a.constant
                if constant < 0 or not _signs(packed)[0]:
                    self.at_least_zero.add((constant, packed))
            return True
        if a.packed != b.packed:  # a - b - 1 ≥ 0
            packed, constant = a.packed - b.packed, a.constant - b.constant - 1
            if constant < 0 or not _signs(packed)[0]:
                self.at_least_zero.add((constant, packed))
        return False

    def lt(self, a: Linear, b: Linear) -> bool:
        return not self.le(b, a)

    def eq(self, a: Linear, b: Linear) -> bool:
        equal = a.value == b.value
        if a.packed != b.packed:  # a - b = 0, or ≠ 0
            packed, constant = a.packed - b.packed, a.constant - b.constant
            if equal:
                self.zero.add((constant, packed))
            elif not (constant > 0 and _signs(packed)[0]) and not (constant < 0 and _signs(packed)[1]):
                self.not_zero.add((constant, packed))
        return equal

    def aligned(self, size: Linear) -> Linear:
        """`size` rounded up to the buffer's alignment: the rounded value with the same bytes per unit of
        each variable wherever those are a multiple of it (the cells × tokens are counted in units of the
        alignment); a tensor of b bytes per unit of one variable, b not a multiple of it (the positions'
        4 bytes a token), the variable that counts its aligned size (`_variables`); else the rounded
        value, kept for these very values only."""
        rounded = -(-size.value // ALIGNMENT) * ALIGNMENT
        rounding = _rounding(size.packed, self.count) if size.packed else (-1, 0)
        if rounding == (-1, 0):
            return Linear(rounded, size.packed, size.constant + rounded - size.value)
        if rounding is not None and rounding in self.aligned_by:
            index, per_unit = rounding
            if size.value == per_unit * self.points[index]:
                return self.variable(self.aligned_by[rounding], ALIGNMENT)
        for index, point in enumerate(self.points):  # each variable this one: variable - point = 0
            self.zero.add((-point, 1 << (_FIELD * index)))
        return self.form(rounded)


class Allocator:
    """ggml-alloc's `ggml_dyn_tallocr`: best fit among the free blocks but the last, else the last one. Each
    free block is [offset, size, end], its end always the form offset + size (kept, not added up at each
    comparison)."""

    def __init__(self, conditions: Conditions) -> None:
        self.conditions = conditions
        self.blocks: list[list[Linear]] = [[conditions.form(0), conditions.form(_END), conditions.form(_END)]]
        self.peak = conditions.form(0)
        self.nothing = conditions.form(0)
        self.everything = conditions.form(_END)

    def alloc(self, size: Linear) -> Linear:
        decide = self.conditions
        size = decide.aligned(size)
        blocks = self.blocks
        best, best_size = -1, self.everything
        for index in range(len(blocks) - 1):
            block_size = blocks[index][1]
            if decide.le(size, block_size) and decide.le(block_size, best_size):
                best, best_size = index, block_size
        block = blocks[best]  # -1: the last
        offset = block[0]
        block[0] = offset + size
        block[1] = block[1] - size
        if decide.eq(block[1], self.nothing):
            del blocks[best]
        end = offset + size
        if decide.lt(self.peak, end):
            self.peak = end
        return offset

    def free(self, offset: Linear, size: Linear) -> None:
        decide = self.conditions
        size = decide.aligned(size)
        end = offset + size
        blocks = self.blocks
        for index, block in enumerate(blocks):
            if decide.eq(block[2], offset):
                block[1] = block[1] + size
                block[2] = block[2] + size
                if index + 1 < len(blocks) and decide.eq(block[2], blocks[index + 1][0]):
                    block[1] = block[1] + blocks[index + 1][1]
                    block[2] = block[0] + block[1]
                    del blocks[index + 1]
                return
            if decide.eq(end, block[0]):
                block[0] = offset
                block[1] = block[1] + size
                block[2] = offset + block[1]
                if index > 0 and decide.eq(blocks[index - 1][2], offset):
                    previous = blocks[index - 1]
                    previous[1] = previous[1] + block[1]
                    previous[2] = previous[0] + previous[1]
                    del blocks[index]
                return
        position = 0
        while position < len(blocks) and decide.lt(blocks[position][0], offset):
            position += 1
        blocks.insert(position, [offset, size, end])


Size = int | Linear  # what the graph's builders write: bytes, or bytes per cell of the cache


@dataclass(slots=True)
class _Node:
    size: Linear  # bytes; 0 for a view
    srcs: tuple[int, ...]
    inplace: bool = False  # an element-wise op ggml-alloc may write over its input (ggml_op_can_inplace)
    view_of: int | None = None  # a view (reshape, permute, get_rows' output is not one) of this node
    output: bool = False
    external: bool = False  # memory outside the compute buffer (the weights, the KV cache)


@dataclass(frozen=True, slots=True)
class _Structure:
    """A graph's nodes without their sizes, as the allocator's walk reads them (one tuple per property, a
    node's entry at its index): built once per graph and walked again with each new set of sizes."""

    srcs: tuple[tuple[int, ...], ...]
    inplace: tuple[bool, ...]
    view_of: tuple[int | None, ...]
    output: tuple[bool, ...]
    external: tuple[bool, ...]
    children: tuple[int, ...]  # the nodes that read each one
    views: tuple[int, ...]  # the views of each one
    owns: tuple[bool, ...]  # memory of its own in the buffer: neither a view nor external

    @classmethod
    def of(cls, nodes: list[_Node]) -> _Structure:
        children, views = [0] * len(nodes), [0] * len(nodes)
        for node in nodes:
            if node.view_of is not None:
                views[node.view_of] += 1
            for src in node.srcs:
                children[src] += 1
        return cls(tuple(node.srcs for node in nodes), tuple(node.inplace for node in nodes),
                   tuple(node.view_of for node in nodes), tuple(node.output for node in nodes),
                   tuple(node.external for node in nodes), tuple(children), tuple(views),
                   tuple(node.view_of is None and not node.external for node in nodes))


@dataclass
class _Graph:
    conditions: Conditions
    nodes: list[_Node] = field(default_factory=list)

    def _form(self, size: Size) -> Linear:
        return size if isinstance(size, Linear) else self.conditions.form(size)

    def inputs(self, size: Size, copies: int) -> int:
        """A copy of an input from the host at the split's start; under pipeline parallelism the scheduler
        keeps `copies` of each, marked input and output so that the allocator never frees them."""
        for _ in range(copies - 1):
            self.add(size, output=True)
        return self.add(size, output=copies > 1)

    def add(self, size: Size, *srcs: int, inplace: bool = False, output: bool = False) -> int:
        self.nodes.append(_Node(self._form(size), tuple(s for s in srcs if s >= 0), inplace=inplace,
                                output=output))
        return len(self.nodes) - 1

    def view(self, of: int) -> int:
        """A view of `of`, read by this node; a view of a view is a view of its owner (ggml_view_impl: the
        view_src of a view is the tensor that holds the memory)."""
        owner = self.nodes[of].view_of
        self.nodes.append(_Node(self._form(0), (of,), view_of=of if owner is None else owner))
        return len(self.nodes) - 1

    def external(self, *srcs: int) -> int:
        """Memory outside the buffer: the weights, the KV cache, a write into the cache (`ggml_set_rows`)."""
        self.nodes.append(_Node(self._form(0), srcs, external=True))
        return len(self.nodes) - 1

    def peak(self) -> int:
        """The buffer's size at the cells the graph was built for."""
        return self.run().value

    def run(self) -> Linear:
        """The allocator's walk over these nodes (`_walk`)."""
        return _walk(_Structure.of(self.nodes), [node.size for node in self.nodes], self.conditions)


def _walk(graph: _Structure, sizes: list[Linear], decide: Conditions) -> Linear:
    """Run ggml-alloc's `ggml_gallocr_alloc_graph_impl` over the nodes of `graph`, each of its size in
    `sizes`: the buffer's size, as a form of the cells that holds wherever `decide`'s conditions do."""
    srcs, inplace, view_of, output, external = (graph.srcs, graph.inplace, graph.view_of, graph.output,
                                                graph.external)
    children, views = list(graph.children), list(graph.views)
    offsets: list[Linear | None] = [None] * len(sizes)  # set once a node is placed (and kept once freed)
    allocated = [False] * len(sizes)
    allocator = Allocator(decide)

    def allocate(index: int) -> None:
        """Place a node not placed yet that has memory of its own (no view, nothing external)."""
        if inplace[index]:
            for src in srcs[index]:
                if output[src] or external[src] or children[src] != 1 or views[src] != 0:
                    continue
                owner = view_of[src]
                if owner is not None:
                    if (views[owner] == 1 and children[owner] == 0 and allocated[owner]
                            and decide.eq(sizes[owner], sizes[index]) and not output[owner]):
                        offsets[index], allocated[index] = offsets[owner], True
                        allocated[owner] = False
                        return
                    continue
                if allocated[src] and decide.eq(sizes[src], sizes[index]):
                    offsets[index], allocated[index] = offsets[src], True
                    allocated[src] = False
                    return
        offsets[index] = allocator.alloc(sizes[index])
        allocated[index] = True

    def release(index: int) -> None:
        if allocated[index] and not output[index]:
            allocator.free(offsets[index], sizes[index])  # type: ignore[arg-type]  # placed: allocated
            allocated[index] = False

    owns = graph.owns
    for index, read in enumerate(srcs):
        for src in read:
            if offsets[src] is None and owns[src]:
                allocate(src)
        if offsets[index] is None and owns[index]:
            allocate(index)
        for src in read:
            children[src] -= 1
            if children[src] == 0 and views[src] == 0:
                owner = view_of[src]
                if owner is not None:
                    views[owner] -= 1
                    if views[owner] == 0 and children[owner] == 0:
                        release(owner)
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
    # A build known to build the f16 mask (b9410 on, `llamacpp_builds`): the earlier graph is not sized.
    f16_mask_only: bool = False
    copies: int = 1  # copies of each input the scheduler keeps (4 under pipeline parallelism, never freed)
    # Latent attention (llama.cpp's deepseek2 graph, absorbed): kv_lora_rank (0: not latent), the rotary and
    # the rest of each query head, the value head, q_lora_rank (0: queries projected from the hidden state
    # in one step); `latent_values`: the build keeps the latent again as a V cache (before the V-less cache),
    # which adds its row indices as an input and the latent's store.
    kv_lora_rank: int = 0
    rope_dim: int = 0
    nope_dim: int = 0
    v_head_dim: int = 0
    q_lora_rank: int = 0
    latent_values: bool = False
    # The cache's streams (one per slot, or one pool) and the bytes of one value of its K type: without flash
    # attention the V-less latent cache's V (a view of K) is copied transposed, every stream's cells (read
    # only then: `copies_latent`).
    streams: int = 1
    key_value_bytes: int = F16

    @property
    def copies_latent(self) -> bool:
        """Whether each layer copies the latent of every cell (`_latent_attention` without flash attention,
        V a view of K): its size is the cells alone, a variable of its own in the regions' walk."""
        return bool(self.kv_lora_rank) and not self.flash_attention and not self.latent_values


def _norm(graph: _Graph, x: int, size: Size) -> int:
    return graph.add(size, graph.add(size, x, inplace=True), inplace=True)  # rms_norm, then × weight in place


def _attention(graph: _Graph, shape: GraphShape, x: int, tokens: Size, cells: Size, all_cells: Size,
               inputs: dict[object, int]) -> int:
    """One layer's attention over `tokens`, `cells` its cache cells × the tokens (the mask's elements);
    `all_cells` (the cells of every stream) is read by latent attention alone."""
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
        mask = inputs[cells]
        if shape.mask_cast:
            if ("cast", cells) not in inputs:
                # ggml_cast, read by every layer
                inputs["cast", cells] = graph.add(cells * F16, mask)
            mask = inputs["cast", cells]
        out = graph.add(q_size, graph.view(q), cache_k, cache_v, mask)
    else:
        scores = graph.add(cells * shape.heads * F32, cache_k, graph.view(q))
        scores = graph.add(cells * shape.heads * F32, scores, inputs[cells], inplace=True)
        kqv = graph.add(q_size, cache_v, scores)
        out = graph.add(q_size, graph.view(kqv))  # ggml_cont of the permuted heads
    out = graph.add(shape.hidden * tokens * F32, graph.view(out))  # wo
    if shape.post_norms:
        out = _norm(graph, out, shape.hidden * tokens * F32)
    return out


def _latent_attention(graph: _Graph, shape: GraphShape, x: int, tokens: Size, cells: Size, all_cells: Size,
                      inputs: dict[object, int]) -> int:
    """One layer's latent attention as llama.cpp builds it with the absorption (src/models/deepseek2.cpp,
    `llm_build_deepseek2`, is_mla; src/llama-graph.cpp, `build_attn` for the K-only input and
    `build_attn_mha` with flash attention), node by node in the order ggml_build_forward_expand walks them
    (the query first, then the value, then the key, then the cache store):

    - the query: attn_q_a, its RMS norm, attn_q_b (or attn_q alone), heads × (nope + rope) values a token;
      its nope part (a view, permuted) times attn_k_b per head: kv_lora_rank values a head and token
      (q_nope_absorbed); its rope part (a view) rotated into a tensor of its own; the two concatenated
      into Q, heads × (kv_lora_rank + rope);
    - the latent: attn_kv_a_mqa (kv_lora_rank + rope a token), its latent part (a view) RMS-normed into a
      tensor of its own (the view's owner has a second view, so nothing is written over it): V; its rope
      part rotated; the two concatenated into K, one head of kv_lora_rank + rope, stored in the cache;
    - flash attention over the cache (one K head, V a view of its first kv_lora_rank values): kv_lora_rank
      × heads × tokens, f32; multiplied per head by attn_v_b (v_head_dim × tokens × heads, f32), made
      contiguous again (a copy), then attn_output;
    - without flash attention (`build_attn_mha`'s other branch, in the order ggml_build_forward_expand
      reaches its nodes from the output: the V operand of KQV first): where V is a view of K (the V-less
      cache), V is not stored transposed, so it is copied transposed (ggml_cont), kv_lora_rank × every
      stream's cells in the K cache's type; then K × Q, the scores (cells × tokens × heads, f32), the
      softmax in place with the f32 mask, the scores × V (kv_lora_rank × tokens × heads, f32), × attn_v_b
      (v_head_dim × tokens × heads, f32) and its permuted heads made contiguous (ggml_cont_2d), then
      attn_output. The builds that keep the latent again as V store it transposed without flash attention
      (v_trans): KQV reads the cache itself, no copy."""
    heads, rank, rope = shape.heads, shape.kv_lora_rank, shape.rope_dim
    cur = _norm(graph, x, shape.hidden * tokens * F32)
    query_width = heads * (shape.nope_dim + rope) * tokens * F32
    if shape.q_lora_rank:
        q = graph.add(shape.q_lora_rank * tokens * F32, cur)  # attn_q_a
        q = _norm(graph, q, shape.q_lora_rank * tokens * F32)  # attn_q_a_norm
        q = graph.add(query_width, q)  # attn_q_b
    else:
        q = graph.add(query_width, cur)  # attn_q
    q_nope = graph.view(graph.view(q))  # the nope part, permuted
    absorbed = graph.view(graph.add(rank * heads * tokens * F32, q_nope))  # × attn_k_b, permuted back
    q_pe = graph.add(rope * heads * tokens * F32, graph.view(q), inputs["pos"], inplace=True)  # rope
    query = graph.add((rank + rope) * heads * tokens * F32, absorbed, q_pe)  # concat
    compressed = graph.add((rank + rope) * tokens * F32, cur)  # attn_kv_a_mqa
    latent = _norm(graph, graph.view(compressed), rank * tokens * F32)  # attn_kv_a_norm
    value = graph.view(latent)  # reshaped to one head
    k_pe = graph.add(rope * tokens * F32, graph.view(compressed), inputs["pos"], inplace=True)  # rope
    key = graph.add((rank + rope) * tokens * F32, value, k_pe)  # concat
    graph.external(graph.view(key), inputs["k_idxs"])  # set_rows into the cache
    if shape.latent_values:
        graph.external(graph.view(value), inputs["v_idxs"])  # the latent again, into the V cache
    cache = graph.external()
    mask = inputs[cells]
    query_heads = graph.view(graph.view(query))  # split into the streams, permuted
    if not shape.flash_attention:
        if shape.copies_latent:  # V, a view of K's latent, copied transposed
            key_view = graph.view(graph.view(graph.view(cache)))  # the latent's view, permuted, transposed
            values = graph.add(all_cells * (rank * shape.key_value_bytes), key_view)
        else:  # the V cache, stored transposed
            values = graph.view(graph.external())
        scores = graph.add(cells * heads * F32, graph.view(cache), query_heads)  # K × Q
        scores = graph.add(cells * heads * F32, scores, mask, inplace=True)  # softmax
        out = graph.add(rank * heads * tokens * F32, values, scores)  # × V
        out = graph.add(shape.v_head_dim * heads * tokens * F32, out)  # × attn_v_b
        out = graph.add(shape.v_head_dim * heads * tokens * F32, graph.view(out))  # ggml_cont_2d
        return graph.add(shape.hidden * tokens * F32, out)  # attn_output
    if shape.mask_cast:
        if ("cast", cells) not in inputs:
            inputs["cast", cells] = graph.add(cells * F16, mask)  # ggml_cast, read by every layer
        mask = inputs["cast", cells]
    out = graph.add(rank * heads * tokens * F32, query_heads, cache, graph.view(cache), mask)
    out = graph.add(shape.v_head_dim * heads * tokens * F32, graph.view(out))  # × attn_v_b
    out = graph.add(shape.v_head_dim * heads * tokens * F32, graph.view(out))  # ggml_cont
    return graph.add(shape.hidden * tokens * F32, graph.view(out))  # attn_output


def _mlp(graph: _Graph, shape: GraphShape, x: int, tokens: Size) -> int:
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


def _inputs(shape: GraphShape, tokens: Size, outputs: Size,
            layers: tuple[Size, ...]) -> list[tuple[object, Size]]:
    """The split's inputs copied from the host, in order, each named and sized: the token embeddings, the
    positions, the cache's row indices, a mask per distinct cache length of `layers` (each layer's cells ×
    the tokens, named by it; f16 for flash attention, which reads it as it is) and the rows that give
    logits."""
    # a transposed V: a row per value (latent attention's V cache holds the latent alone)
    v_rows = 1 if shape.flash_attention else shape.kv_lora_rank or shape.kv_heads * shape.head_dim
    mask_bytes = F16 if shape.flash_attention and not shape.mask_cast else F32
    found: list[tuple[object, Size]] = [
        ("embd", shape.hidden * tokens * F32), ("pos", tokens * I32), ("k_idxs", tokens * I64)]
    if not shape.kv_lora_rank or shape.latent_values:  # the V-less latent cache has no V rows to index
        found.append(("v_idxs", tokens * v_rows * I64))
    found += [(cells, cells * mask_bytes) for cells in dict.fromkeys(layers)]
    if shape.output_layer:
        found.append(("out_ids", outputs * I32))
    return found


def _build(shape: GraphShape, tokens: Size, outputs: Size, layers: tuple[Size, ...],
           conditions: Conditions, all_cells: tuple[Size, ...]) -> _Graph:
    """The graph of `shape` for `tokens` and `outputs` through `layers`, each its cache cells × the tokens,
    and `all_cells`, each layer's cells in every stream (read where the latent is copied,
    `GraphShape.copies_latent`): bytes, or forms of the graph's variables (`_variables`)."""
    graph = _Graph(conditions)
    inputs = {name: graph.inputs(size, shape.copies)
              for name, size in _inputs(shape, tokens, outputs, layers)}
    x = inputs["embd"]
    last = len(layers) - 1
    for index, cells in enumerate(layers):
        residual = x
        attention = _latent_attention if shape.kv_lora_rank else _attention
        attended = attention(graph, shape, x, tokens, cells, all_cells[index], inputs)
        rows = tokens
        if index == last and shape.output_layer:
            attended = graph.add(shape.hidden * outputs * F32, attended, inputs["out_ids"])  # get_rows
            residual = graph.add(shape.hidden * outputs * F32, residual, inputs["out_ids"])
            rows = outputs
        mixed = graph.add(shape.hidden * rows * F32, attended, residual, inplace=True)
        x = graph.add(shape.hidden * rows * F32, _mlp(graph, shape, mixed, rows), mixed, inplace=True)
    if shape.output_layer:
        size = shape.hidden * outputs * F32
        norm = graph.add(size, graph.add(size, x, inplace=True), inplace=True, output=True)
        graph.add(shape.vocab * outputs * F32, norm, output=True)
    return graph


def _variables(points: tuple[int, ...], aligned: tuple[tuple[int, int], ...]) -> tuple[int, ...]:
    """The values of a graph's variables where its tokens, outputs and cells × tokens of each distinct cache
    length (then, where latent attention copies V, each length's cells in every stream) are `points`: each
    of those a variable of its own, then, for each (variable, bytes per unit) in
    `aligned`, the aligned size of a tensor of those bytes in units of the alignment (the positions, 4 bytes
    a token: ⌈4 × tokens / 128⌉), so that every size the allocator rounds stays a form of the variables."""
    return (*points, *(-(-per_unit * points[index] // ALIGNMENT) for index, per_unit in aligned))


def _forms(conditions: Conditions, unit: int, count: int) -> tuple[Linear, ...]:
    """The tokens, the outputs, each distinct cache length's cells × tokens and, where latent attention copies
    V, each length's cells in every stream (those two counted in units of `unit`): the first `count`
    variables of `conditions`, each a form of its own variable at its value there."""
    return tuple(conditions.variable(index, unit if index > 1 else 1) for index in range(count))


def build_graph(shape: GraphShape) -> _Graph:
    """The device's split of the worst-case graph, node by node in llama.cpp's order, in plain bytes."""
    return _build(shape, shape.tokens, shape.outputs, tuple(cells * shape.tokens for cells in shape.layers),
                  Conditions(()), tuple(cells * shape.streams for cells in shape.layers))


def _stranded_logits(shape: GraphShape) -> int:
    """The logits on top of the split's input copies: the final norm can land in the smallest hole that holds
    it, right above the copies' freed space, and the logits, too large for any hole, go above it."""
    if not shape.output_layer:
        return 0
    layers = tuple(cells * shape.tokens for cells in shape.layers)
    sizes = [size if isinstance(size, int) else size.value
             for _, size in _inputs(shape, shape.tokens, shape.outputs, layers)]
    copies = sum(-(-size // ALIGNMENT) * ALIGNMENT for size in sizes)
    return copies * shape.copies + (shape.hidden + shape.vocab) * shape.outputs * F32


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


Terms = tuple[int, tuple[int, ...]]  # a form kept: (constant, bytes per unit of each variable)


@dataclass(frozen=True)
class _Region:
    """Values of the graph's variables for which the allocator takes one path through it (`Conditions`), and
    its peak there."""

    low: tuple[int, ...]  # each variable's least and most (a condition on it alone)
    high: tuple[int, ...]
    not_at: tuple[frozenset[int], ...]  # and the values it may not take
    at_least_zero: tuple[Terms, ...]  # the conditions on several variables together
    zero: tuple[Terms, ...]
    not_zero: tuple[Terms, ...]
    peak: Terms

    @classmethod
    def of(cls, conditions: Conditions, peak: Linear) -> _Region:
        count = conditions.count
        low, high = [0] * count, [_END] * count
        not_at: list[set[int]] = [set() for _ in range(count)]
        several: dict[str, list[tuple[int, ...]]] = {"at_least_zero": [], "zero": [], "not_zero": []}
        for kind, forms in (("at_least_zero", conditions.kept(conditions.at_least_zero)),
                            ("zero", conditions.kept(conditions.zero)),
                            ("not_zero", conditions.kept(conditions.not_zero))):
            for terms in forms:
                alone = [index for index in range(count) if terms[index + 1]]
                if len(alone) != 1:
                    several[kind].append(terms)
                    continue
                index = alone[0]
                constant, per_cell = terms[0], terms[index + 1]
                if kind == "at_least_zero":  # constant + per_cell × value ≥ 0
                    if per_cell > 0:
                        low[index] = max(low[index], -(constant // per_cell))
                    else:
                        high[index] = min(high[index], constant // -per_cell)
                elif constant % per_cell:  # never zero: a whole number cannot make it
                    if kind == "zero":
                        low[index], high[index] = 1, 0
                elif kind == "zero":
                    low[index] = max(low[index], -constant // per_cell)
                    high[index] = min(high[index], -constant // per_cell)
                else:
                    not_at[index].add(-constant // per_cell)
        # the conditions that always hold where the others do are left out: each region is asked of
        # every probe until one holds
        bounds = _Bounds(tuple(low), tuple(high), tuple(conditions.aligned_by.items()))
        peak_terms = conditions.terms(peak)
        return cls(tuple(low), tuple(high), tuple(frozenset(points) for points in not_at),
                   tuple((terms[0], terms[1:]) for terms in several["at_least_zero"]
                         if not bounds.always_at_least_zero(terms)),
                   tuple((terms[0], terms[1:]) for terms in several["zero"]),
                   tuple((terms[0], terms[1:]) for terms in several["not_zero"]
                         if not bounds.never_zero(terms)),
                   (peak_terms[0], peak_terms[1:]))

    def holds(self, values: tuple[int, ...]) -> bool:
        for count, low, high, not_at in zip(values, self.low, self.high, self.not_at, strict=True):
            if not low <= count <= high or count in not_at:
                return False
        return (self.bytes(values) < _END // 4  # every offset far below the end (`_Bounds.past_the_end`)
                and all(_at(terms, values) >= 0 for terms in self.at_least_zero)
                and all(_at(terms, values) == 0 for terms in self.zero)
                and all(_at(terms, values) != 0 for terms in self.not_zero))

    def bytes(self, values: tuple[int, ...]) -> int:
        return _at(self.peak, values)


def _at(terms: Terms, values: tuple[int, ...]) -> int:
    constant, per_unit = terms
    total: int = sum(map(operator.mul, per_unit, values))
    return constant + total


@dataclass(frozen=True)
class _Bounds:
    """What a region's values are known to keep, to leave out the conditions that always hold there: each
    variable within its least and most, an aligned size's variable within its tensor's (⌈b × value / 128⌉:
    b × value ≤ 128 × it ≤ b × value + 127), and every offset of the walk below the end of the address
    space (the region's peak far below it, `_Region.holds`)."""

    low: tuple[int, ...]
    high: tuple[int, ...]
    aligned: tuple[tuple[tuple[int, int], int], ...]  # ((variable, bytes per unit), its aligned size's)

    @staticmethod
    def past_the_end(terms: tuple[int, ...]) -> bool:
        """A comparison with the end of the address space (the last free block's size or end): the end less
        an offset or a hole, each at most the peak."""
        return abs(terms[0]) >= _END // 2

    def least(self, terms: tuple[int, ...], sign: int = 1) -> int:
        """The least of sign × the form (times 128) over the values the region keeps, an aligned size's
        variable read as the bounds on its tensor's size."""
        per_unit = [sign * ALIGNMENT * term for term in terms[1:]]
        constant = sign * ALIGNMENT * terms[0]
        for (index, bytes_per_unit), counted in self.aligned:
            term, per_unit[counted] = per_unit[counted] // ALIGNMENT, 0
            per_unit[index] += term * bytes_per_unit
            constant += min(0, term * (ALIGNMENT - 1))
        return constant + sum(term * (self.low[index] if term > 0 else self.high[index])
                              for index, term in enumerate(per_unit) if term)

    def always_at_least_zero(self, terms: tuple[int, ...]) -> bool:
        return self.past_the_end(terms) or self.least(terms) >= 0

    def never_zero(self, terms: tuple[int, ...]) -> bool:
        return self.past_the_end(terms) or self.least(terms) > 0 or self.least(terms, -1) > 0


@functools.lru_cache(maxsize=256)
def _regions(template: GraphShape, unit: int) -> list[_Region]:
    """The regions found so far of a graph whose layers are named by their distinct cache length (0, 1…),
    its tokens and outputs not sized, its cells × tokens counted in units of `unit`: filled by `_peak`,
    MAX_REGIONS at most, the one read longest ago dropped first."""
    return []


# A node's size as a walk sets it: (constant, packed terms, (variable, bytes per unit) of each term not 0,
# the size itself where it has no term).
_Sized = tuple[int, int, tuple[tuple[int, int], ...], Linear]


@dataclass(frozen=True)
class _Compiled:
    """A graph built once, as every walk of it reads it: its nodes (`_Structure`), each node's size as a form
    of the graph's variables (`_variables`) and the variables its aligned sizes need (`_aligned_variables`).
    A capacity search walks the same graph at each new set of values, and only the sizes' values change."""

    structure: _Structure
    sized: tuple[_Sized, ...]
    aligned: tuple[tuple[int, int], ...]


@functools.lru_cache(maxsize=256)
def _compiled(template: GraphShape, unit: int) -> _Compiled:
    """The graph of `template` built with its tokens, outputs, each distinct cache length's cells × tokens
    (and, where latent attention copies V, its cells alone) as variables, each at 1: its sizes alone are
    read off it (no size has a term in the aligned sizes' variables, which only the allocator's rounding
    brings in)."""
    lengths = len(set(template.layers))
    conditions = Conditions((1,) * (2 + lengths * (2 if template.copies_latent else 1)))
    forms = _forms(conditions, unit, conditions.count)
    graph = _build(template, forms[0], forms[1], tuple(forms[2 + index] for index in template.layers),
                   conditions, _all_cells(template, forms, lengths))
    sized, aligned = [], set()
    for node in graph.nodes:
        constant, *per_unit = conditions.terms(node.size)
        terms = tuple((index, term) for index, term in enumerate(per_unit) if term)
        if len(terms) == 1 and terms[0][1] % ALIGNMENT:
            aligned.add(terms[0])
        sized.append((constant, node.size.packed, terms, conditions.form(constant)))
    return _Compiled(_Structure.of(graph.nodes), tuple(sized), tuple(sorted(aligned)))


@functools.lru_cache(maxsize=256)
def _aligned_variables(template: GraphShape, unit: int) -> tuple[tuple[int, int], ...]:
    """(variable, bytes per unit of it) of each tensor of `template` whose aligned size needs a variable of
    its own (`_variables`): its bytes per unit not a multiple of the alignment."""
    return _compiled(template, unit).aligned


def _simulate(template: GraphShape, points: tuple[int, ...], unit: int) -> _Region:
    """One run of the allocator over the graph of `template` with its tokens, outputs and each distinct cache
    length's cells × tokens `points` (the last in units of `unit`): its peak and where it holds, both as
    forms of the graph's variables (`_variables`)."""
    aligned = _aligned_variables(template, unit)
    values = _variables(points, aligned)
    conditions = Conditions(values, {key: len(points) + index for index, key in enumerate(aligned)})
    compiled = _compiled(template, unit)
    sizes = [Linear(constant + sum(per_unit * values[index] for index, per_unit in terms), packed, constant)
             if terms else constant_size for constant, packed, terms, constant_size in compiled.sized]
    return _Region.of(conditions, _walk(compiled.structure, sizes, conditions))


def _all_cells(template: GraphShape, forms: tuple[Linear, ...], lengths: int) -> tuple[Size, ...]:
    """Each layer's cells in every stream, where the graph reads them (`GraphShape.copies_latent`): the
    variables after the `lengths` distinct cache lengths' cells × tokens; else none is read (0)."""
    if not template.copies_latent:
        return (0,) * len(template.layers)
    return tuple(forms[2 + lengths + index] for index in template.layers)


def _peak(shape: GraphShape) -> int:
    """The allocator's peak over the graph of `shape`: read off a region an earlier run found, where one
    holds these tokens, outputs and cells (the same path, so the same bytes), else run here. A capacity
    search asks one graph at dozens of cache lengths and, with a stream per slot, of micro-batches (each
    -np rounds it up to a multiple of its own), and a handful of regions cover them all."""
    cells = tuple(dict.fromkeys(shape.layers))
    # the streams count in the latent copy's variable (`_all_cells`), not in the graph: a template for any -np
    template = replace(shape, layers=tuple(cells.index(count) for count in shape.layers), tokens=0, outputs=0,
                       streams=1)
    unit = math.gcd(ALIGNMENT, *cells)  # the cache's lengths are multiples of 256 cells: 128 in all
    points = (shape.tokens, shape.outputs, *(count // unit * shape.tokens for count in cells),
              *(count * shape.streams // unit for count in cells if shape.copies_latent))
    values = _variables(points, _aligned_variables(template, unit))
    regions = _regions(template, unit)
    for region in reversed(regions):  # the latest read first: a search's next probe is most often near it
        if region.holds(values):
            if regions[-1] is not region:
                _read(regions, region)
            return region.bytes(values)
    region = _simulate(template, points, unit)
    with _REGIONS_CHANGING:
        if len(regions) >= MAX_REGIONS:
            del regions[0]
        regions.append(region)
    return region.bytes(values)


_REGIONS_CHANGING = threading.Lock()  # one request's thread reorders a graph's regions at a time


def _read(regions: list[_Region], region: _Region) -> None:
    """Move `region` to the end of `regions`, the latest read (unless another thread dropped it since)."""
    with _REGIONS_CHANGING:
        for index in range(len(regions) - 1, -1, -1):
            if regions[index] is region:
                regions.append(regions.pop(index))
                return


@functools.lru_cache(maxsize=512)
def compute_buffer_bytes(shape: GraphShape) -> int:
    """The device's compute buffer: the allocator's peak over the worst-case graph of either generation of the
    mask (f16 as built now, f32 cast on the device as before; the f16 one alone for a build known to build
    it), and no less than the logits stranded above the input copies (where the allocator may place them;
    Ollama's 32k log shows it). Without flash attention both generations read the mask in f32, uncast: one
    graph, walked once."""
    short = shortened(shape)
    if shape.f16_mask_only or not shape.flash_attention:
        return max(_peak(short), _stranded_logits(short))
    earlier = replace(short, mask_cast=True)
    return max(_peak(short), _peak(earlier), _stranded_logits(earlier))


# --- a Gated DeltaNet layer (qwen3next's linear attention), a Kimi Delta Attention one (kimi-linear's) ---

DELTA_CHUNK = 64  # the chunked delta rule's chunk (CS) for Gated DeltaNet
KDA_CHUNK = 16  # and for Kimi Delta Attention, whose decay is per channel (delta-net-base.cpp: kda ? 16 : 64)


@dataclass(frozen=True)
class DeltaNetShape:
    """What one Gated DeltaNet layer's graph of a micro-batch depends on (llama.cpp's qwen3next), or, with
    `per_channel_gate`, one Kimi Delta Attention layer's (kimi-linear: key and value heads alike)."""

    hidden: int
    key_heads: int  # ssm_n_group
    value_heads: int  # ssm_dt_rank
    head_dim: int  # ssm_d_state: a key head's and a value head's width (llama.cpp asserts they match)
    conv_kernel: int  # ssm_d_conv
    tokens: int  # the micro-batch, a multiple of `sequences`
    sequences: int  # n_seqs of the micro-batch reserved
    states: int  # the recurrent states the memory holds (its size, n_seq_max): all gathered at reserve
    per_channel_gate: bool = False  # Kimi Delta Attention: a decay per key channel, not one per head


def _state_rows(graph: _Graph, copies: int, row: int, shape: DeltaNetShape) -> int:
    """`build_rs`: the states of the micro-batch's sequences gathered into the buffer (get_rows), and those
    of the other sequences gathered and copied back into the cache (with the full memory reserved, every
    state the memory holds)."""
    main = graph.add(row * shape.sequences * F32, copies)
    if shape.states > shape.sequences:
        graph.external(graph.add(row * (shape.states - shape.sequences) * F32, copies))
    return main


def _chunked_delta_rule(graph: _Graph, shape: DeltaNetShape, q: int, k: int, v: int, gate: int, beta: int,
                        state: int) -> int:
    """`build_delta_net_chunking` (src/models/delta-net-base.cpp), node by node: each sequence's tokens
    padded to whole chunks; the decay mask, the chunk's key-key and key-query products and the triangular
    solve, chunk × chunk per head; the chunks' values, cumulated decays and keys; then, chunk after chunk,
    the state carried through (its products, the chunk's output written into the values in place). With a
    decay per channel (Kimi Delta Attention) the chunk is 16, the decays are a value per channel, and the
    decay mask is chunk × chunk per channel, weighing the keys and queries before their products."""
    heads, width, seqs = shape.value_heads, shape.head_dim, shape.sequences
    kda = shape.per_channel_gate
    chunk = KDA_CHUNK if kda else DELTA_CHUNK
    per_sequence = shape.tokens // seqs
    padded = -(-per_sequence // chunk) * chunk * seqs  # the padded tokens of every sequence
    chunks = padded // seqs // chunk
    vectors = padded * heads * width * F32  # [S, CS, n_chunks, H × n_seqs]
    scalars = padded * heads * F32  # β: one value a token and head
    gates = vectors if kda else scalars  # g: a value a token and head, or a token and channel
    square = chunk * padded * heads * F32  # [CS, CS, n_chunks, H × n_seqs]
    q = graph.add(shape.tokens * heads * width * F32, q, inplace=True)  # scale
    q_pad = graph.add(vectors, graph.view(q))
    k_pad = graph.add(vectors, graph.view(k))
    v_pad = graph.add(vectors, graph.view(v))
    g_pad = graph.add(gates, graph.view(gate))
    b_pad = graph.add(scalars, graph.view(beta))
    v_beta = graph.add(vectors, v_pad, b_pad, inplace=True)
    k_beta = graph.add(vectors, k_pad, b_pad, inplace=True)
    g_cumsum = graph.add(gates, graph.add(gates, graph.view(g_pad)))  # cont(transpose), cumsum
    if kda:
        cube = chunk * padded * heads * width * F32  # [CS, CS, S_k, n_chunks × H × n_seqs]
        decay = graph.add(cube, graph.view(g_cumsum))  # repeat_4d
        decay = graph.add(cube, decay, g_cumsum, inplace=True)  # sub
        decay = graph.add(cube, graph.add(cube, decay, inplace=True), inplace=True)  # tri, exp
        decay = graph.add(cube, graph.view(decay))  # cont_4d(permute)
        decayed_kb = graph.add(cube, decay, graph.view(k_beta))
        decayed_q = graph.add(cube, decay, graph.view(q_pad))
        kb = graph.add(square, graph.add(square, decayed_kb, graph.view(k_pad)))  # mul_mat, cont(transpose)
        kq = graph.add(square, graph.add(square, decayed_q, graph.view(k_pad)))
    else:
        decay = graph.add(square, graph.view(g_cumsum))  # repeat_4d
        decay = graph.add(square, decay, g_cumsum, inplace=True)  # sub
        decay = graph.add(square, graph.add(square, decay), inplace=True)  # tri, exp
        kb = graph.add(square, graph.add(square, graph.view(k_pad), graph.view(k_beta)), decay, inplace=True)
        kq = graph.add(square, graph.add(square, graph.view(k_pad), graph.view(q_pad)), decay, inplace=True)
    kq = graph.add(square, kq)  # tri
    attn = graph.add(square, kb)  # tri
    identity = graph.add(chunk * chunk * F32, graph.add(chunk * F32, graph.view(attn)))
    lhs = graph.add(square, attn, identity, inplace=True)
    negated = graph.add(square, attn, inplace=True)
    attn = graph.add(square, graph.add(square, lhs, negated), identity, inplace=True)  # solve_tri, + identity
    values = graph.add(vectors, graph.add(vectors, graph.view(v_beta)), attn)  # cont(transpose), mul_mat
    g_exp = graph.add(gates, g_cumsum)
    k_cumdecay = graph.add(vectors, graph.add(vectors, graph.add(vectors, graph.view(k_beta)), g_exp,
                                              inplace=True), attn)  # kbg, then × attn
    q_g_exp = graph.add(vectors, q_pad, graph.add(gates, graph.view(g_exp)), inplace=True)
    last = chunks * heads * seqs * F32 * (width if kda else 1)
    g_last = graph.add(last, graph.view(g_cumsum))  # cont
    g_last_exp = graph.add(last, g_last, inplace=True)  # exp
    g_diff = graph.add(gates, graph.add(gates, g_cumsum, g_last, inplace=True), inplace=True)  # sub, neg
    g_diff = graph.add(gates, graph.add(gates, g_diff, inplace=True))  # exp, cont(transpose)
    key_gdiff_t = graph.add(vectors, graph.view(graph.add(vectors, k_pad, g_diff, inplace=True)))
    values_t = graph.add(vectors, graph.view(values))  # cont(transpose)
    chunk_block = chunk * width * heads * seqs * F32
    state_block = width * width * heads * seqs * F32
    current = graph.view(state)
    output = values
    for _ in range(chunks):
        v_prime = graph.add(chunk_block, graph.view(k_cumdecay), current)
        v_new = graph.add(chunk_block, graph.view(values_t), v_prime, inplace=True)
        v_attn = graph.add(chunk_block, v_new, graph.view(kq))
        inter = graph.add(chunk_block, current, graph.view(q_g_exp))
        chunk_out = graph.add(chunk_block, inter, v_attn, inplace=True)
        graph.external(chunk_out)  # set_inplace into the values
        output = graph.view(output)
        kgv = graph.add(state_block, graph.view(key_gdiff_t), v_new)
        current = graph.add(state_block, current, graph.view(g_last_exp), inplace=True)
        current = graph.add(state_block, current, kgv, inplace=True)
    graph.external(current)  # the new state copied into the cache
    return graph.view(output)


@functools.lru_cache(maxsize=256)
def delta_net_layer_bytes(shape: DeltaNetShape) -> int:
    """ggml's allocator over one Gated DeltaNet layer's graph of the micro-batch (src/models/qwen3next.cpp,
    `build_layer_attn_linear`, its attn_qkv path): the layer's input and the state indices alive throughout;
    the norm, the fused q/k/v projection and z, β and the gate; the convolution's states gathered and
    concatenated before the new tokens, convolved and silu'd; the recurrent states gathered; q and k
    L2-normed and repeated to the value heads; the chunked delta rule (`_chunked_delta_rule`); the gated
    norm and the output projection. Its peak, in bytes."""
    graph = _Graph(Conditions(()))
    tokens, heads, width = shape.tokens, shape.value_heads, shape.head_dim
    channels = (2 * shape.key_heads + heads) * width
    values = heads * width * tokens * F32
    x = graph.add(shape.hidden * tokens * F32, output=True)
    copies = graph.add(shape.states * I32, output=True)
    cur = _norm(graph, x, shape.hidden * tokens * F32)
    qkv = graph.add(channels * tokens * F32, cur)
    z = graph.add(values, cur)
    ba = graph.add(2 * heads * tokens * F32, cur)
    beta = graph.add(heads * tokens * F32, graph.add(heads * tokens * F32, graph.view(ba)), inplace=True)
    gate = graph.add(heads * tokens * F32, graph.view(ba))  # cont
    for _ in range(3):  # + dt bias, softplus, × ssm_a
        gate = graph.add(heads * tokens * F32, gate, inplace=True)
    conv_states = _state_rows(graph, copies, (shape.conv_kernel - 1) * channels, shape)
    conv_input = graph.add((tokens + shape.sequences * (shape.conv_kernel - 1)) * channels * F32,
                           graph.view(conv_states), graph.view(qkv))  # concat
    graph.external(graph.view(conv_input))  # the last kernel − 1 columns copied back into the cache
    state = _state_rows(graph, copies, width * width * heads, shape)
    conv = graph.add(channels * tokens * F32, graph.add(channels * tokens * F32, conv_input), inplace=True)
    q = graph.add(shape.key_heads * width * tokens * F32, graph.view(conv))  # l2_norm
    k = graph.add(shape.key_heads * width * tokens * F32, graph.view(conv))
    if heads != shape.key_heads:  # repeated to the value heads
        q = graph.add(values, graph.view(q))
        k = graph.add(values, graph.view(k))
    out = _chunked_delta_rule(graph, shape, q, k, graph.view(conv), gate, beta, state)
    normed = _norm(graph, out, values)
    gated = graph.add(values, normed, graph.add(values, z, inplace=True), inplace=True)  # × silu(z)
    graph.add(shape.hidden * tokens * F32, graph.add(shape.hidden * tokens * F32, gated), x, inplace=True)
    return graph.peak()


@functools.lru_cache(maxsize=256)
def kda_layer_bytes(shape: DeltaNetShape) -> int:
    """ggml's allocator over one Kimi Delta Attention layer's graph of the micro-batch (src/models/
    kimi-linear.cpp, its KDA branch): the layer's input and the state indices alive throughout; the norm;
    the convolution states of q, k and v gathered as one row; each of q, k and v projected, concatenated
    after its states, convolved and silu'd (`causal_conv1d`); the per-channel decay through its bottleneck
    (f_a, f_b, + dt bias, softplus, × A) and β; the recurrent states gathered; q and k L2-normed; the chunked
    delta rule (`_chunked_delta_rule`, per channel); the output gate's bottleneck (g_a, g_b), the norm, the
    sigmoid gate and the output projection. Its peak, in bytes."""
    graph = _Graph(Conditions(()))
    tokens, heads, width = shape.tokens, shape.value_heads, shape.head_dim
    channels = heads * width
    values = channels * tokens * F32
    x = graph.add(shape.hidden * tokens * F32, output=True)
    copies = graph.add(shape.states * I32, output=True)
    cur = _norm(graph, x, shape.hidden * tokens * F32)
    conv_states = _state_rows(graph, copies, 3 * (shape.conv_kernel - 1) * channels, shape)
    convolved = []
    for _ in range(3):  # q, k, v
        projected = graph.add(values, cur)
        conv_input = graph.add((tokens + shape.sequences * (shape.conv_kernel - 1)) * channels * F32,
                               graph.view(conv_states), graph.view(projected))  # concat
        graph.external(graph.view(conv_input))  # the last kernel − 1 columns copied back into the cache
        convolved.append(graph.add(values, graph.add(values, conv_input), inplace=True))  # ssm_conv, silu
    gate = graph.add(values, graph.add(width * tokens * F32, cur))  # f_a, f_b
    for _ in range(3):  # + dt bias, softplus, × A
        gate = graph.add(values, gate, inplace=True)
    beta = graph.add(heads * tokens * F32, graph.add(heads * tokens * F32, cur), inplace=True)  # sigmoid
    state = _state_rows(graph, copies, width * width * heads, shape)
    q = graph.add(values, graph.view(convolved[0]))  # l2_norm
    k = graph.add(values, graph.view(convolved[1]))
    out = _chunked_delta_rule(graph, shape, q, k, convolved[2], gate, beta, state)
    out = graph.add(values, out)  # cont
    output_gate = graph.add(values, graph.add(width * tokens * F32, cur))  # g_a, g_b
    normed = _norm(graph, out, values)
    gated = graph.add(values, normed, graph.add(values, output_gate, inplace=True), inplace=True)  # × σ(g)
    graph.add(shape.hidden * tokens * F32, graph.add(values, gated), x, inplace=True)  # cont_2d, attn_output
    return graph.peak()
