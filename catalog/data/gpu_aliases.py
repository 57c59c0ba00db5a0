"""The names marketplaces' feeds give the shipped GPU types (`catalog.models.GpuAlias`).

(alias, GPU type name, where the name is used). A name listed for several types ("A100") stands for
boards told apart by their memory: a record takes the type whose datasheet memory is nearest its own.
Names that already match a GPU type's name or slug once case, spaces, hyphens and underscores are
ignored ("RTX4090", "RTX 6000Ada", "A10") need no alias; a few are listed anyway, as the marketplaces
write them, so staff see them in the table. Staff add, change or remove aliases in the admin;
`load_catalog` adds the missing ones and never undoes staff's edits.
"""

VAST = "Vast.ai gpu_name"
RUNPOD = "RunPod gpuTypes id or displayName"
LAMBDA = "Lambda instance type, GPU part"
SKYPILOT = "SkyPilot AcceleratorName"
GPUHUNT = "gpuhunt gpu_name"
PRIME = "Prime Intellect gpuType and socket"
DRIVER = "nvidia-smi / rocm-smi product name"

GPU_ALIASES = [
    # H100 and H200
    ("H100 SXM", "H100 SXM 80GB", f"{VAST}; {RUNPOD}"),
    ("H100 SXM5", "H100 SXM 80GB", f"{LAMBDA} (h100_sxm5)"),
    ("H100 80GB HBM3", "H100 SXM 80GB", DRIVER),
    ("NVIDIA H100 80GB HBM3", "H100 SXM 80GB", RUNPOD),
    ("H100 PCIe", "H100 PCIe 80GB", f"{VAST}; {RUNPOD}; {LAMBDA} (h100_pcie)"),
    ("NVIDIA H100 PCIe", "H100 PCIe 80GB", RUNPOD),
    ("NVIDIA H100 NVL", "H100 NVL", RUNPOD),
    ("H100_80GB SXM5", "H100 SXM 80GB", PRIME),
    ("H100_80GB PCIe", "H100 PCIe 80GB", PRIME),
    ("NVIDIA H200", "H200", RUNPOD),
    ("H200_141GB", "H200", PRIME),
    ("NVIDIA B200", "B200", RUNPOD),
    ("B200 SXM6", "B200", LAMBDA),
    ("B200_180GB", "B200", PRIME),
    # A100: one name for both memories where the feed says the memory apart
    ("A100", "A100 40GB", f"{GPUHUNT}; {SKYPILOT}; {LAMBDA}"),
    ("A100", "A100 80GB", f"{GPUHUNT}; {SKYPILOT}"),
    ("A100 SXM4", "A100 40GB", f"{VAST}; {LAMBDA}"),
    ("A100 SXM4", "A100 80GB", VAST),
    ("A100 PCIe", "A100 40GB", VAST),
    ("A100 PCIe", "A100 80GB", f"{VAST}; {RUNPOD}"),
    ("A100 SXM", "A100 80GB", RUNPOD),
    ("A100 80GB SXM4", "A100 80GB", LAMBDA),
    ("A100-SXM4-80GB", "A100 80GB", DRIVER),
    ("NVIDIA A100-SXM4-80GB", "A100 80GB", RUNPOD),
    ("NVIDIA A100 80GB PCIe", "A100 80GB", RUNPOD),
    ("A100-80GB", "A100 80GB", f"{SKYPILOT}; {PRIME} (A100_80GB)"),
    ("A100_40GB", "A100 40GB", PRIME),
    # Ada, Ampere and Blackwell workstation and consumer boards
    ("NVIDIA GeForce RTX 4090", "RTX 4090", f"{RUNPOD}; {DRIVER}"),
    ("RTX 4090", "RTX 4090", f"{VAST}; {RUNPOD}"),
    ("RTX4090_24GB", "RTX 4090", PRIME),
    ("NVIDIA GeForce RTX 5090", "RTX 5090", RUNPOD),
    ("NVIDIA GeForce RTX 3090", "RTX 3090", RUNPOD),
    ("RTX A6000", "RTX A6000", f"{VAST}; {RUNPOD}"),
    ("NVIDIA RTX A6000", "RTX A6000", RUNPOD),
    ("A6000", "RTX A6000", f"{LAMBDA}; {GPUHUNT}"),
    ("A6000_48GB", "RTX A6000", PRIME),
    ("NVIDIA RTX A5000", "RTX A5000", RUNPOD),
    ("NVIDIA RTX A4000", "RTX A4000", RUNPOD),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada", RUNPOD),
    ("RTX6000Ada_48GB", "RTX 6000 Ada", PRIME),
    ("L40S", "L40S", f"{VAST}; {RUNPOD}; {GPUHUNT}"),
    ("NVIDIA L40S", "L40S", RUNPOD),
    ("L40S_48GB", "L40S", PRIME),
    ("NVIDIA L40", "L40", RUNPOD),
    ("NVIDIA L4", "L4", RUNPOD),
    ("A10G", "A10", f"{GPUHUNT} (AWS); {SKYPILOT}"),
    ("NVIDIA A10", "A10", RUNPOD),
    # Older data-centre boards
    ("Tesla V100-SXM2-16GB", "V100 16GB", DRIVER),
    ("Tesla V100-SXM2-32GB", "V100 32GB", DRIVER),
    ("Tesla V100-PCIE-16GB", "V100 16GB", DRIVER),
    ("V100", "V100 16GB", f"{GPUHUNT}; {SKYPILOT}; {LAMBDA}"),
    ("V100", "V100 32GB", f"{GPUHUNT}; {SKYPILOT}"),
    ("Tesla V100", "V100 16GB", VAST),
    ("Tesla V100", "V100 32GB", VAST),
    ("Tesla T4", "T4", f"{VAST}; {DRIVER}"),
    # AMD
    ("MI300X", "MI300X", f"{RUNPOD}; {GPUHUNT}"),
    ("AMD Instinct MI300X OAM", "MI300X", RUNPOD),
    ("AMD Instinct MI300X", "MI300X", DRIVER),
    ("MI300X_192GB", "MI300X", PRIME),
]
