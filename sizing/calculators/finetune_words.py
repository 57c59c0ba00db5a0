"""The assumptions a fine-tuning breakdown states: the method, the adapters, the optimizer, activations,
the loss and, under QLoRA, the quantization at load."""
from __future__ import annotations

from ..i18n import gettext
from ..units import fmt_int


def finetune_words(precision: int, lora_rank: int) -> list[str]:
    rank = fmt_int(lora_rank)
    base_words = base_words_of(precision)
    assumptions = [
        base_words,
        gettext(
            "LoRA adapters (Hu et al. 2021) of rank %(rank)s sit on the q, k, v and o projections of every "
            "layer; a rank-r adapter on a d_in × d_out projection trains r × (d_in + d_out) parameters. The "
            "MLP "
            "projections carry none."
        ) % {"rank": rank},
        gettext("Each trainable parameter costs 16 bytes under mixed precision with AdamW: 2 (16-bit "
                "weight) + "
        "2 (gradient) + 4 + 4 (the two AdamW moments) + 4 (fp32 master weight), as counted in ZeRO "
        "(Rajbhandari et al. 2020)."),
        gettext("Activations assume gradient checkpointing of every layer (Korthikanti et al. 2022, "
                "\"Reducing "
        "Activation Recomputation in Large Transformer Models\"): each layer's 16-bit input is kept, and "
        "one layer is recomputed at a time. Attention runs in a fused kernel (FlashAttention, Dao et al. "
        "2022, or PyTorch SDPA), so its memory grows linearly with the sequence: Korthikanti's s × s score "
        "term is replaced by a 4-byte log-sum-exp per head and token, and the MLP is counted at the model's "
        "own gated width."),
        gettext("The trainer is assumed to compute the loss as Hugging Face transformers' causal-LM models "
                "(Trainer, "
        "TRL's SFTTrainer) and torchtune's recipes without chunked cross-entropy do: the logits over the "
        "whole vocabulary for every token are upcast to fp32, and the fp32 logits, their log-softmax and its "
        "gradient are alive together (12 bytes per logit). At long sequences they are a common cause of "
        "running out of memory; chunked or fused losses (Liger kernels, torchtune's chunked cross-entropy) "
        "need much less."),
        gettext("The 20 %% safety margin covers temporary buffers and memory fragmentation.") % {},
        gettext("Fine-tuning is sized for one GPU."),
        gettext(
            "Frameworks differ: training scripts may keep extra copies (e.g. a dequantized layer, gradients "
            "in fp32, evaluation batches); if you change such settings, keep an eye on the margin."
        ),
    ]
    if precision == 4:
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


def base_words_of(precision: int) -> str:
    if precision == 4:
        return gettext(
            "QLoRA (Dettmers et al. 2023): the frozen base is stored as 4-bit NormalFloat with double "
            "quantization, 4.127 bits per parameter, for the linear layers of the decoder blocks; the "
            "embeddings "
            "and the output head stay 16-bit."
        )
    if precision == 16:
        return gettext("LoRA: the frozen base is stored in 16-bit.")
    return gettext(
        "LoRA on an 8-bit base (bitsandbytes LLM.int8(), Dettmers et al. 2022): the linear layers of "
        "the decoder blocks in 8-bit with one 32-bit scale per row, the embeddings and the output head "
        "in 16-bit."
    )
