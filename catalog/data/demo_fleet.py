"""The demo fleet's definition: fictional providers and the machines they typically offer.

`catalog.fleets.load_demo_fleet` expands this with a fixed seed, so every load yields the same
machine ids and figures. Prices are USD per GPU-hour, in line with public GPU cloud list prices.
"""
from typing import Any

DEMO_SEED = 20250601

# Each offer: (gpu type name, GPU counts per machine, list price per GPU-hour).
SECURE_OFFERS = [
    ("H100 SXM 80GB", (8,), "2.49"),
    ("H200", (8,), "3.29"),
    ("B200", (8,), "4.99"),
    ("H100 PCIe 80GB", (1, 2), "2.19"),
    ("H100 NVL", (1, 2, 4), "2.59"),
    ("A100 80GB", (1, 2, 4, 8), "1.49"),
    ("A100 40GB", (1, 8), "1.09"),
    ("L40S", (1, 2, 4, 8), "0.89"),
    ("L4", (1, 2, 4), "0.44"),
    ("A10", (1,), "0.55"),
    ("T4", (1,), "0.29"),
    ("RTX 6000 Ada", (1, 2, 4), "0.84"),
    ("MI300X", (8,), "2.69"),
]
COMMUNITY_OFFERS = [
    ("RTX 4090", (1, 2, 4, 8), "0.34"),
    ("RTX 3090", (1, 2, 4), "0.19"),
    ("RTX 5090", (1, 2), "0.59"),
    ("RTX A6000", (1, 2, 4), "0.45"),
    ("RTX A5000", (1, 2), "0.24"),
    ("RTX A4000", (1,), "0.15"),
    ("V100 16GB", (1, 4, 8), "0.14"),
    ("V100 32GB", (1, 8), "0.22"),
    ("L40S", (1, 2), "0.69"),
    ("A100 80GB", (1, 2), "1.19"),
    ("H100 PCIe 80GB", (1,), "1.89"),
    ("RTX 6000 Ada", (1, 2), "0.74"),
    ("T4", (1,), "0.12"),
]

# Each provider: name, tier, machine id prefix, number of machines, locations as (country, region).
DEMO_PROVIDERS: list[dict[str, Any]] = [
    {
        "name": "Harbor Compute", "tier": "secure", "prefix": "hbr", "machines": 60,
        "locations": [("DE", "Frankfurt"), ("NL", "Amsterdam"), ("IE", "Dublin"), ("FR", "Paris")],
        "notes": "Tier III datacenters in the EU.",
    },
    {
        "name": "Fjord Datacenters", "tier": "secure", "prefix": "fjd", "machines": 45,
        "locations": [("NO", "Oslo"), ("SE", "Stockholm"), ("FI", "Helsinki")],
        "notes": "Hydro-powered halls in the Nordics.",
    },
    {
        "name": "Meridian Cloud", "tier": "secure", "prefix": "mrd", "machines": 55,
        "locations": [("US", "Virginia"), ("US", "Oregon"), ("CA", "Montreal"), ("GB", "London")],
        "notes": "",
    },
    {
        "name": "Kumo Racks", "tier": "secure", "prefix": "kmo", "machines": 30,
        "locations": [("JP", "Tokyo"), ("SG", "Singapore"), ("AU", "Sydney")],
        "notes": "",
    },
    {
        "name": "Attic GPU Collective", "tier": "community", "prefix": "atc", "machines": 60,
        "locations": [("DE", "Bavaria"), ("PL", "Warsaw"), ("ES", "Madrid"), ("IT", "Milan"), ("FR", "Lyon")],
        "notes": "Hosts' own machines across Europe.",
    },
    {
        "name": "Backyard Render Network", "tier": "community", "prefix": "byr", "machines": 60,
        "locations": [
            ("US", "Texas"), ("US", "Ohio"), ("BR", "São Paulo"), ("IN", "Bengaluru"), ("CA", "Ontario"),
        ],
        "notes": "",
    },
    {
        "name": "Alpine Hosts", "tier": "community", "prefix": "alp", "machines": 30,
        "locations": [("CH", "Zurich"), ("AT", "Vienna"), ("IT", "Turin")],
        "notes": "",
    },
]

# Sites where a Secure provider runs identical 8-GPU machines on an RDMA network, so a model larger than
# one machine can be served by several (a cluster). Each: provider, machine id prefix, site, location,
# GPU type, interconnect and its speed in Gb/s, and each machine's price per GPU-hour (one machine per
# price; near the list prices above: machines on InfiniBand or RoCE cost a little more than alone), and how
# many of its machines (the first, by id) the demo refresh keeps whole: a site's machines are otherwise as
# busy as any demo machine (whole and online in about one minute of ten), so without machines held back for
# clusters two whole ones at one site would be rare. Every machine is whole and free when loaded, its
# memory the datacenter's (the GPU type's datasheet).
CLUSTER_SITES: list[dict[str, Any]] = [
    {
        "provider": "Harbor Compute", "prefix": "hbr-fra-ib1", "site": "FRA-IB1", "country": "DE",
        "region": "Frankfurt", "gpu_type": "H100 SXM 80GB", "interconnect": "infiniband", "gbps": 400,
        "prices": ("2.69", "2.69", "2.75", "2.75"), "kept_whole": 3,
    },
    {
        "provider": "Meridian Cloud", "prefix": "mrd-iad-h200", "site": "IAD-H200", "country": "US",
        "region": "Virginia", "gpu_type": "H200", "interconnect": "infiniband", "gbps": 400,
        "prices": ("3.49", "3.49", "3.59"), "kept_whole": 2,
    },
    {
        "provider": "Fjord Datacenters", "prefix": "fjd-osl-a100", "site": "OSL-A100", "country": "NO",
        "region": "Oslo", "gpu_type": "A100 80GB", "interconnect": "roce", "gbps": 400,
        "prices": ("1.59", "1.65"), "kept_whole": 0,
    },
    {
        "provider": "Kumo Racks", "prefix": "kmo-tyo-mi300", "site": "TYO-MI300", "country": "JP",
        "region": "Tokyo", "gpu_type": "MI300X", "interconnect": "roce", "gbps": 400,
        "prices": ("2.89", "2.89"), "kept_whole": 2,
    },
]
CLUSTER_GPUS_PER_MACHINE = 8


def cluster_machine_id(spec: dict[str, Any], index: int) -> str:
    """The provider machine id of a cluster site's `index`-th machine."""
    return f"{spec['prefix']}-{index:02d}"


# The machines the demo refresh always reports whole and online (reserved for clusters): three sites keep
# two or more, so the demo shows clusters at any minute, Llama 3.1 405B in 16-bit at 131,072 tokens × 8
# requests on 2 × (8 × H200), 2 × (8 × MI300X) and 3 × (8 × H100) among them.
KEPT_WHOLE_MACHINE_IDS = frozenset(
    cluster_machine_id(spec, index) for spec in CLUSTER_SITES for index in range(spec["kept_whole"])
)

# Measured speeds on a few demo machines: (provider prefix, machine index, kind, model slug, precision,
# value, unit). Speeds are only ever shown where measured; these are the demo's measurements.
DEMO_SPEEDS = [
    ("hbr", 0, "language", "llama-3-1-8b", 16, "2450.0", "tokens/s"),
    ("hbr", 0, "language", "llama-3-1-70b", 16, "610.0", "tokens/s"),
    ("mrd", 0, "language", "llama-3-1-8b", 8, "2980.0", "tokens/s"),
    ("atc", 0, "language", "llama-3-1-8b", 4, "145.0", "tokens/s"),
    ("atc", 0, "image", "stable-diffusion-xl", 16, "18.5", "images/min"),
    ("byr", 0, "image", "flux-1-schnell", 16, "9.2", "images/min"),
]
DEMO_SPEEDS_MEASURED_AT = "2025-05-12T09:00:00+00:00"
