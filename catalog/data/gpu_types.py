"""GPU types with memory as the driver reports it (nvidia-smi / rocm-smi, MiB): the figure a workload
can count on, below the marketed size (the driver reserves part; ECC on GDDR boards costs 1/16)."""

NV = "https://www.nvidia.com/en-us/"

# (name, vendor, marketed, memory_mib, datasheet_url, notes)
GPU_TYPES = [
    ("H100 SXM 80GB", "NVIDIA", "80GB", 81559, NV + "data-center/h100/", "Driver reserves part of 80 GiB."),
    ("H100 PCIe 80GB", "NVIDIA", "80GB", 81559, NV + "data-center/h100/", ""),
    ("H100 NVL", "NVIDIA", "94GB", 95830, NV + "data-center/h100/", ""),
    ("H200", "NVIDIA", "141GB", 143771, NV + "data-center/h200/", ""),
    ("A100 40GB", "NVIDIA", "40GB", 40960, NV + "data-center/a100/", ""),
    ("A100 80GB", "NVIDIA", "80GB", 81920, NV + "data-center/a100/", ""),
    ("L40S", "NVIDIA", "48GB", 46068, NV + "data-center/l40s/", "ECC on (GDDR) costs 1/16."),
    ("RTX 6000 Ada", "NVIDIA", "48GB", 49140, NV + "design-visualization/rtx-6000/", "ECC off."),
    ("RTX A6000", "NVIDIA", "48GB", 49140, NV + "design-visualization/rtx-a6000/", ""),
    ("RTX 4090", "NVIDIA", "24GB", 24564, NV + "geforce/graphics-cards/40-series/rtx-4090/", ""),
    ("RTX 5090", "NVIDIA", "32GB", 32607, NV + "geforce/graphics-cards/50-series/rtx-5090/", ""),
    ("RTX 3090", "NVIDIA", "24GB", 24576, NV + "geforce/graphics-cards/30-series/rtx-3090-3090ti/", ""),
    ("A10", "NVIDIA", "24GB", 23028, NV + "data-center/products/a10-gpu/", "ECC on; A10G reports as A10."),
    ("L4", "NVIDIA", "24GB", 23034, NV + "data-center/l4/", "ECC on."),
    ("T4", "NVIDIA", "16GB", 15360, NV + "data-center/tesla-t4/", "ECC on."),
    ("V100 16GB", "NVIDIA", "16GB", 16160, NV + "data-center/v100/", ""),
    ("V100 32GB", "NVIDIA", "32GB", 32510, NV + "data-center/v100/", ""),
    ("B200", "NVIDIA", "180GB", 183359, NV + "data-center/hgx/", ""),
    (
        "MI300X", "AMD", "192GB", 196288,
        "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
        "rocm-smi VRAM Total Memory 205822885888 B.",
    ),
    # Beyond reference/gpus.csv: common cards whose driver figure is widely logged.
    ("L40", "NVIDIA", "48GB", 46068, NV + "data-center/l40/", "ECC on; same memory as the L40S."),
    ("RTX A5000", "NVIDIA", "24GB", 24564, NV + "design-visualization/rtx-a5000/", "ECC off."),
    ("RTX A4000", "NVIDIA", "16GB", 16376, NV + "design-visualization/rtx-a4000/", "ECC off."),
]

# The total CUDA reports to PyTorch (torch.cuda.mem_get_info()[1]): what vLLM's gpu_memory_utilization
# multiplies. On Hopper it is below the nvidia-smi total above (the driver keeps part for itself).
# name -> (MiB, where it comes from). A type not listed here has none recorded: its nvidia-smi figure
# stands in, and the GPU type says so.
USABLE_MEMORY = {
    "H100 SXM 80GB": (
        81090,
        "79.19 GiB total as vLLM 0.19 logs it on an H100 80GB HBM3 (torch.cuda.mem_get_info; llm-d planner "
        "start-up logs, catalog/data/reference/vllm_startup_logs.csv), rounded down to the MiB",
    ),
}
NVIDIA_SMI_SOURCE = "not recorded: the nvidia-smi total stands in (reference/gpus.csv)"


def usable_memory(name: str, memory_mib: int) -> tuple[int | None, str]:
    """The usable figure of a shipped GPU type and its source (None when not recorded)."""
    if name in USABLE_MEMORY:
        return USABLE_MEMORY[name]
    return None, NVIDIA_SMI_SOURCE

# Each shipped GPU type's architecture and, on NVIDIA, its CUDA compute capability: what the rule of
# which engine runs which weights and KV cache reads (`sizing.engine_support`). From NVIDIA's CUDA GPUs
# table (developer.nvidia.com/cuda-gpus) and AMD's ROCm hardware list (MI300X: CDNA3, gfx942, no CUDA
# compute capability). name -> (architecture, compute capability).
ARCHITECTURES = {
    "H100 SXM 80GB": ("hopper", "9.0"),
    "H100 PCIe 80GB": ("hopper", "9.0"),
    "H100 NVL": ("hopper", "9.0"),
    "H200": ("hopper", "9.0"),
    "B200": ("blackwell", "10.0"),
    "RTX 5090": ("blackwell", "12.0"),
    "L40S": ("ada", "8.9"),
    "L40": ("ada", "8.9"),
    "L4": ("ada", "8.9"),
    "RTX 4090": ("ada", "8.9"),
    "RTX 6000 Ada": ("ada", "8.9"),
    "RTX A6000": ("ampere", "8.6"),
    "RTX A5000": ("ampere", "8.6"),
    "RTX A4000": ("ampere", "8.6"),
    "RTX 3090": ("ampere", "8.6"),
    "A10": ("ampere", "8.6"),
    "A100 40GB": ("ampere", "8.0"),
    "A100 80GB": ("ampere", "8.0"),
    "T4": ("turing", "7.5"),
    "V100 16GB": ("volta", "7.0"),
    "V100 32GB": ("volta", "7.0"),
    "MI300X": ("cdna3", ""),
}


def architecture(name: str) -> tuple[str, str]:
    """A shipped GPU type's (architecture, compute capability); empty where none is recorded."""
    return ARCHITECTURES.get(name, ("", ""))
