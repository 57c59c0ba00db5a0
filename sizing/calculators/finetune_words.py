"""The assumptions a fine-tuning breakdown states: the method, the adapters, the optimizer, activations,
the loss and, under QLoRA, the quantization at load."""
from __future__ import annotations

from ..i18n import gettext
from ..training import Training
from ..units import fmt_int


def finetune_words(precision: int, training: Training | int) -> list[str]:
    if isinstance(training, int):  # a rank alone: the documentation's trainer at that rank
        training = Training(lora_rank=training)
    rank = fmt_int(training.lora_rank)
    gptq = precision == 4 and training.base_format == "gptq"
    base_words = gptq_base_words() if gptq else base_words_of(precision)
    assumptions = [
        base_words,
        adapter_words(training, rank),
        optimizer_words(training),
        activation_words(training),
        loss_words(training),
        gettext("The 20 %% safety margin covers temporary buffers and memory fragmentation.") % {},
        gettext("Fine-tuning is sized for one GPU."),
        gettext(
            "Frameworks differ: training scripts may keep extra copies (e.g. a dequantized layer, gradients "
            "in fp32, evaluation batches); if you change such settings, keep an eye on the margin."
        ),
    ]
    if gptq:
        assumptions.insert(1, gptq_peak_words())
    elif precision == 4:
        assumptions.insert(1, gettext(
            "The 4-bit base is quantized on the GPU while the 16-bit checkpoint loads, as torchtune's QLoRA "
            "recipe does with torchao's NF4 (versions that quantize a matrix in one piece): for the largest "
            "matrix it holds a 16-bit and a scaled copy and the distance of every value to each of the 16 "
            "NF4 levels. The allocator keeps that memory "
            "reserved and training reuses it (torchtune reports 9.13 GB reserved after loading Llama 2 7B "
            "and 9.29 GB at the training peak), so the need is the larger of the two: where the load "
            "needs more than the adapters, activations and logits, the difference is its own item. "
            "bitsandbytes quantizes in a CUDA kernel and needs about 2 bytes per value of that matrix."
        ))
    return assumptions


def gptq_base_words() -> str:
    return gettext(
        "GPTQ-LoRA: the frozen base is a published GPTQ checkpoint (Frantar et al. 2022) as AutoGPTQ and "
        "GPTQModel store it and transformers (optimum) loads it: 4 bits per weight of the decoder blocks' "
        "linear layers, with a 16-bit scale and a packed 4-bit zero per group of 128 input values (the "
        "default group size), 4.156 bits in all; the embeddings, the output head and the norms stay "
        "16-bit. Its one int32 group index per input row (act-order checkpoints) is left to the margin. "
        "Training runs through PEFT's LoRA layer for GPTQ with the triton_v2 kernel, the one with a "
        "backward pass (fms-acceleration's accelerated-peft-autogptq, AutoGPTQ's peft_utils), which "
        "dequantizes one whole matrix to 16-bit before each matmul. PEFT refuses DoRA on a GPTQ layer."
    )


def gptq_peak_words() -> str:
    return gettext(
        "On a GPTQ base the activations stay 16-bit: PEFT's prepare_model_for_kbit_training casts the "
        "non-quantized parameters (embeddings, norms) of a bitsandbytes model to fp32, which makes its "
        "residual stream and every checkpointed layer input fp32, and skips GPTQ models (the training "
        "runs in fp16, as the GPTQ kernels need). With gradient checkpointing the loss is done, and its "
        "logits freed, before the backward pass rebuilds the first layer, so the peak is the larger of the "
        "loss and the recomputed layer, not their sum; a chunked loss's gradient of the hidden states "
        "stays alive with the layer. The NF4 estimate keeps the sum, which stands in for its fp32 stream."
    )


def base_words_of(precision: int) -> str:
    if precision == 4:
        return gettext(
            "QLoRA (Dettmers et al. 2023): the frozen base is stored as 4-bit NormalFloat with double "
            "quantization, 4.127 bits per parameter, for the linear layers of the decoder blocks; the "
            "embeddings and the output head stay 16-bit."
        )
    if precision == 16:
        return gettext("LoRA: the frozen base is stored in 16-bit.")
    return gettext(
        "LoRA on an 8-bit base (bitsandbytes LLM.int8(), Dettmers et al. 2022): the linear layers of the "
        "decoder blocks in 8-bit with one 32-bit scale per row, the embeddings and the output head in "
        "16-bit."
    )


def adapter_words(training: Training, rank: str) -> str:
    if training.lora_targets == "attention" and training.adapter == "lora":
        return gettext(
            "LoRA adapters (Hu et al. 2021) of rank %(rank)s sit on the q, k, v and o projections of every "
            "layer; a rank-r adapter on a d_in × d_out projection trains r × (d_in + d_out) parameters. The "
            "MLP "
            "projections carry none."
        ) % {"rank": rank}
    where = {
        "attention": gettext("the q, k, v and o projections of every layer (PEFT's target_modules "
                             "q_proj, k_proj, v_proj, o_proj; torchtune's lora_attn_modules)"),
        "qv": gettext("the q and v projections of every layer only (PEFT's default for Llama-style models, "
                      "and torchtune's default lora_attn_modules)"),
        "mlp": gettext("the MLP's gate, up and down projections of every layer (every expert's in a mixture "
                       "of experts), none on attention"),
        "all": gettext("every linear layer of the blocks: q, k, v, o, gate, up and down (PEFT's "
                       "\"all-linear\", Unsloth's usual choice, QLoRA's paper), every expert's too"),
    }[training.lora_targets]
    words = gettext(
        "Adapters (Hu et al. 2021) of rank %(rank)s sit on %(where)s; a rank-r adapter on a d_in × d_out "
        "projection trains r × (d_in + d_out) parameters. Each adapted projection's input is kept for the "
        "adapter's gradient: Korthikanti's per-layer count already holds the 16-bit input of every "
        "projection, so the targets change the trainable parameters, not that count."
    ) % {"rank": rank, "where": where}
    if training.adapter == "dora":
        words += " " + gettext(
            "DoRA (Liu et al. 2024, PEFT's use_dora) trains a magnitude per output of each adapted "
            "projection as well, and scales the base output and the adapter's by magnitude ÷ ‖W + s·B·A‖: "
            "it keeps both outputs for the magnitude's gradient in every kept layer (16-bit base output, "
            "fp32 adapter output) and builds the combined weight of one projection at a time to take its "
            "norm, which PEFT detaches from the graph."
        )
    return words


def optimizer_words(training: Training) -> str:
    if training.optimizer == "adamw8bit":
        return gettext(
            "Each trainable parameter costs 8 bytes under mixed precision before the optimizer: 2 (16-bit "
            "weight) + 2 (gradient) + 4 (fp32 master weight), as counted in ZeRO (Rajbhandari et al. "
            "2020); bitsandbytes' 8-bit AdamW (Dettmers et al. 2022, \"8-bit Optimizers via Block-wise "
            "Quantization\"; optim=\"adamw_bnb_8bit\" in the HF Trainer, \"adamw_8bit\" in Unsloth) keeps "
            "each of the two moments in 1 byte with an fp32 scale per block of 256 values, and tensors of "
            "fewer than 4,096 values in fp32 (min_8bit_size)."
        )
    return gettext(
        "Each trainable parameter costs 16 bytes under mixed precision with AdamW: 2 (16-bit weight) + 2 "
        "(gradient) + 4 + 4 (the two AdamW moments) + 4 (fp32 master weight), as counted in ZeRO "
        "(Rajbhandari et al. 2020)."
    )


def activation_words(training: Training) -> str:
    fused = gettext(
        "Attention runs in a fused kernel (FlashAttention, Dao et al. 2022, or PyTorch SDPA), so its memory "
        "grows linearly with the sequence: Korthikanti's s × s score term is replaced by a 4-byte "
        "log-sum-exp per head and token, and the MLP is counted at the model's own gated width."
    )
    if training.gradient_checkpointing == "off":
        return gettext(
            "Activations assume no gradient checkpointing, as PEFT's own benchmarks and plain training "
            "loops run (gradient_checkpointing=False in the HF Trainer): every layer keeps what Korthikanti "
            "et al. 2022 count for one layer of full training, the 16-bit input of each projection, the "
            "attention's inputs and output, the norms and the MLP's tensors, until the backward pass "
            "reaches it."
        ) + " " + fused
    if training.gradient_checkpointing == "offload":
        return gettext(
            "Activations assume gradient checkpointing with the checkpointed layer inputs offloaded to "
            "CPU memory (Unsloth's use_gradient_checkpointing=\"unsloth\", torchtune's "
            "enable_activation_offloading): the GPU holds the inputs of two layers in transit (one "
            "being copied out or back while the other is used) and the one layer being recomputed "
            "(Korthikanti et al. 2022). The offloaded inputs need pinned CPU memory: 2 bytes × tokens × "
            "hidden size × layers."
        ) + " " + fused
    return gettext(
        "Activations assume gradient checkpointing of every layer (Korthikanti et al. 2022, \"Reducing "
        "Activation Recomputation in Large Transformer Models\"): each layer's 16-bit input is kept, and "
        "one layer is recomputed at a time. Attention runs in a fused kernel (FlashAttention, Dao et al. "
        "2022, or PyTorch SDPA), so its memory grows linearly with the sequence: Korthikanti's s × s score "
        "term is replaced by a 4-byte log-sum-exp per head and token, and the MLP is counted at the "
        "model's own gated width."
    )


def loss_words(training: Training) -> str:
    if training.loss == "fused":
        return gettext(
            "The loss is a fused cross-entropy over the batch's logits, as Unsloth's fast cross-entropy "
            "and fms-acceleration's FOAK kernels compute it: the 16-bit logits of every token exist once "
            "and are upcast to fp32 (2 + 4 bytes per logit), and the kernel writes the gradient into them "
            "in place, with no log-softmax copy. torchtune's chunked cross-entropy run eagerly keeps the "
            "same 6 bytes per logit (every chunk's 16-bit logits and fp32 log-softmax)."
        )
    if training.loss == "chunked":
        return gettext(
            "The loss never holds the batch's logits: Liger's fused linear cross-entropy "
            "(use_liger_kernel=True in the HF Trainer and TRL, fms-acceleration's Liger plugin, torchtune "
            "and Unsloth where they call it) computes the output head and the loss a chunk of tokens at a "
            "time, next_power_of_2(⌈tokens ÷ ⌈vocabulary ÷ hidden⌉⌉) tokens, so that a chunk's logits are "
            "about as many values as the batch's hidden states, and keeps the gradient of the hidden "
            "states (16-bit) for the backward pass. A chunk is counted as the full loss counts a logit: 12 "
            "bytes."
        )
    return gettext(
        "The trainer is assumed to compute the loss as Hugging Face transformers' causal-LM models "
        "(Trainer, TRL's SFTTrainer) and torchtune's recipes without chunked cross-entropy do: the logits "
        "over the whole vocabulary for every token are upcast to fp32, and the fp32 logits, their "
        "log-softmax and its gradient are alive together (12 bytes per logit). At long sequences they are "
        "a common cause of running out of memory; chunked or fused losses (Liger kernels, torchtune's "
        "chunked cross-entropy) need much less."
    )
