"""The catalog: models as published, GPU types, providers and their machines.

A figure that is not published is stored as NULL, never as 0: the sizing refuses to compute with a
missing value instead of guessing (see `missing_values()`).
"""
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Case, F, GeneratedField, Q, When
from django.db.models.functions import Coalesce, Least

from catalog.cluster_rule import cluster_index_condition
from catalog.gguf_files import gguf_files_problem
from catalog.gpu_names import gpu_name_key
from sizing.architectures import Architecture, architecture_from_dict
from sizing.countries import is_country_code
from sizing.engine_support import FAMILIES, architecture_problem
from sizing.errors import SizingError
from sizing.limits import MAX_GPUS_PER_MACHINE
from sizing.markets import (
    ANY_MARKET,
    INTERRUPTIBLE,
    MarketPrice,
    interruptible_price,
    market_prices,
    market_problems,
    reliability_problem,
)
from sizing.offers import MEASUREMENT_TEXT_LENGTHS


def positive(label: str) -> MinValueValidator:
    return MinValueValidator(1, message=f"{label} must be a positive number (at least 1).")


# Plain IntegerFields with a validator (and a DB check) rather than PositiveIntegerField: the form
# field of the latter stops a negative number with a generic message before ours can name the field.
def _figure(label: str, help_text: str = "") -> models.IntegerField:
    return models.IntegerField(
        null=True, blank=True, validators=[positive(label)], help_text=help_text or "Empty = not published."
    )


def _positive_or_null(field: str, name: str) -> models.CheckConstraint:
    return models.CheckConstraint(
        condition=Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gt": 0}), name=name
    )


class LanguageModel(models.Model):
    # The figures the inference calculation cannot do without (SPEC §3/§4).
    INFERENCE_FIGURES = ("parameters", "layers", "attention_heads", "kv_heads", "head_dim")

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=120, unique=True)
    parameters = models.BigIntegerField(
        null=True,
        blank=True,
        validators=[positive("Parameters")],
        help_text="Exact count built from the published configuration. Empty = not published.",
    )
    parameters_published = models.CharField(
        max_length=60, blank=True, help_text='The model card\'s rounded figure, e.g. "8.03B".'
    )
    layers = _figure("Layers")
    attention_heads = _figure("Attention heads")
    kv_heads = _figure("KV heads", "Key/value heads (grouped-query attention). Empty = not published.")
    head_dim = _figure("Head dimension")
    hidden_size = _figure("Hidden size")
    intermediate_size = _figure("Intermediate size")
    vocab_size = _figure("Vocabulary size")
    max_context = _figure("Maximum context", "max_position_embeddings, in tokens. Empty = not published.")
    tied_embeddings = models.BooleanField(
        default=False,
        help_text="The output head shares the embedding matrix (tie_word_embeddings): counted once.",
    )
    active_parameters = models.BigIntegerField(
        null=True, blank=True, validators=[positive("Active parameters")],
        help_text="Mixture of experts: parameters used per token, recounted from the configuration.",
    )
    architecture = models.JSONField(
        default=dict, blank=True,
        help_text=(
            "What the plain decoder does not describe: layer_pattern (F full, S sliding, C chunked, "
            "L linear, repeated over the layers), sliding_window, attention_chunk, mla, linear_attention, "
            "moe, native_weights, vision, and how the checkpoint counts (qkv_bias, qk_norm, ...). "
            "Empty = every layer full attention with a dense MLP. Filled in by “Paste config.json”."
        ),
    )
    license = models.CharField(max_length=120, blank=True)
    config_url = models.URLField(max_length=300, blank=True, help_text="The published configuration.")
    hf_id = models.CharField(
        "Hugging Face id", max_length=200, blank=True,
        help_text="The model's id on the Hugging Face Hub (e.g. meta-llama/Llama-3.1-8B), as `vllm serve` "
                  "loads it. Empty = no start command is shown.",
    )
    trust_remote_code = models.BooleanField(
        "Needs --trust-remote-code", default=False,
        help_text="Its repository holds code the engines run to load it (a tokenizer or config class of its "
                  "own): every vLLM and SGLang command carries --trust-remote-code.",
    )
    gguf_files = models.JSONField(
        "GGUF files", default=list, blank=True,
        help_text="The GGUF files published for the model, repositories in the order answers prefer them: "
                  '[{"repository": "owner/name", "source": "where it was read", "files": {"Q4_K_M": {"file": '
                  '"….gguf", "bytes": the exact size or null, "listed_gib": "as listed" or null}}}]. Empty = '
                  "none recorded (llama.cpp and Ollama answers say “no published file”).",
    )
    notes = models.TextField(blank=True)
    is_active = models.BooleanField(default=True, help_text="Offered in the wizard.")

    kind = "language"

    class Meta:
        ordering = ["parameters", "name"]
        constraints = [
            _positive_or_null("parameters", "catalog_lm_parameters_positive"),
            _positive_or_null("layers", "catalog_lm_layers_positive"),
            _positive_or_null("attention_heads", "catalog_lm_heads_positive"),
            _positive_or_null("kv_heads", "catalog_lm_kv_heads_positive"),
            _positive_or_null("head_dim", "catalog_lm_head_dim_positive"),
            _positive_or_null("hidden_size", "catalog_lm_hidden_size_positive"),
            _positive_or_null("intermediate_size", "catalog_lm_intermediate_size_positive"),
            _positive_or_null("vocab_size", "catalog_lm_vocab_size_positive"),
            _positive_or_null("max_context", "catalog_lm_max_context_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        super().clean()
        if self.kv_heads and self.attention_heads and self.attention_heads % self.kv_heads:
            raise ValidationError(
                {"kv_heads": f"KV heads ({self.kv_heads}) must divide the attention heads "
                 f"({self.attention_heads})."}
            )
        try:
            architecture_from_dict(self.architecture)
        except SizingError as error:
            raise ValidationError({"architecture": error.message}) from error
        problem = gguf_files_problem(self.gguf_files)
        if problem is not None:
            raise ValidationError({"gguf_files": problem})

    def parsed_architecture(self) -> Architecture:
        return architecture_from_dict(self.architecture)

    @property
    def family(self) -> str:
        """dense or moe, for grouping the model list."""
        return "moe" if (self.architecture or {}).get("moe") else "dense"

    def missing_values(self) -> list[str]:
        """Names of the figures the inference calculation needs that are not published. Latent
        attention (MLA) caches no per-head K/V, so it needs no KV-head count or head dimension."""
        figures: tuple[str, ...] = self.INFERENCE_FIGURES
        if (self.architecture or {}).get("mla"):
            figures = tuple(name for name in figures if name not in ("kv_heads", "head_dim"))
        return [name for name in figures if getattr(self, name) is None]


class ImagePipeline(models.Model):
    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=120, unique=True)
    license = models.CharField(max_length=120, blank=True)
    config_url = models.URLField(max_length=300, blank=True, help_text="The published configuration.")
    native_resolution = models.CharField(
        max_length=20, blank=True, help_text='Width x height in pixels, e.g. "1024x1024".'
    )
    parameters_published = models.CharField(max_length=60, blank=True)
    notes = models.TextField(blank=True)
    is_active = models.BooleanField(default=True, help_text="Offered in the wizard.")

    kind = "image"

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        super().clean()
        resolution = self.native_resolution
        if resolution:
            width, _, height = resolution.lower().partition("x")
            if not (width.isdigit() and height.isdigit() and int(width) > 0 and int(height) > 0):
                raise ValidationError(
                    {"native_resolution": 'Native resolution must read width x height, e.g. "1024x1024".'}
                )
            self.native_resolution = f"{int(width)}x{int(height)}"

    @property
    def parameters(self) -> int | None:
        """Total over all components; None when any component's count is unpublished."""
        counts = [component.parameters for component in self.components.all()]
        if not counts or any(count is None for count in counts):
            return None
        return sum(count for count in counts if count is not None)  # none is None here

    def missing_values(self) -> list[str]:
        components = list(self.components.all())
        if not components:
            return ["components"]
        return [f"parameters of {c.name}" for c in components if c.parameters is None]


class ImageComponent(models.Model):
    class Role(models.TextChoices):
        DENOISER = "denoiser", "Denoiser"
        TEXT_ENCODER = "text_encoder", "Text encoder"
        AUTOENCODER = "autoencoder", "Autoencoder"

    pipeline = models.ForeignKey(ImagePipeline, on_delete=models.CASCADE, related_name="components")
    name = models.CharField(max_length=120)
    role = models.CharField(max_length=20, choices=Role.choices)
    parameters = models.BigIntegerField(
        null=True, blank=True, validators=[positive("Parameters")], help_text="Empty = not published."
    )
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["pipeline", "order", "id"]
        constraints = [
            models.UniqueConstraint(fields=["pipeline", "name"], name="catalog_component_unique_name"),
            _positive_or_null("parameters", "catalog_component_parameters_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.pipeline}: {self.name}"


# The figures the speech calculation needs: weights and the decoder's KV cache over its window.
SPEECH_FIGURES = (
    "parameters", "decoder_layers", "d_model", "attention_heads",
    "max_source_positions", "max_target_positions",
)


class SpeechModel(models.Model):
    FIGURES = SPEECH_FIGURES

    name = models.CharField(max_length=120)
    slug = models.SlugField(max_length=120, unique=True)
    parameters = models.BigIntegerField(
        null=True, blank=True, validators=[positive("Parameters")], help_text="Empty = not published."
    )
    parameters_published = models.CharField(max_length=60, blank=True)
    encoder_layers = _figure("Encoder layers")
    decoder_layers = _figure("Decoder layers")
    d_model = _figure("Model width (d_model)")
    attention_heads = _figure("Attention heads", "Per layer, encoder and decoder alike.")
    max_source_positions = _figure("Encoder positions", "Encoder frames of the 30-second window (1500).")
    max_target_positions = _figure("Decoder positions", "Decoder token positions (448).")
    vocab_size = _figure("Vocabulary size")
    mel_bins = _figure("Mel bins", "num_mel_bins: 80, or 128 from large-v3 on. Empty = not published.")
    license = models.CharField(max_length=120, blank=True)
    config_url = models.URLField(max_length=300, blank=True, help_text="The published configuration.")
    notes = models.TextField(blank=True)
    is_active = models.BooleanField(default=True, help_text="Offered in the wizard.")

    kind = "speech"

    class Meta:
        ordering = ["parameters", "name"]
        constraints = [
            _positive_or_null(field, f"catalog_speech_{field}_positive")
            for field in (*SPEECH_FIGURES, "encoder_layers", "vocab_size")
        ]

    def __str__(self) -> str:
        return self.name

    def missing_values(self) -> list[str]:
        return [name for name in self.FIGURES if getattr(self, name) is None]


# The architectures a GPU type may name: the families the engine rule knows, by vendor.
GPU_ARCHITECTURES = [(family.key, f"{family.name} ({family.maker})") for family in FAMILIES.values()]


class GpuType(models.Model):
    class Vendor(models.TextChoices):
        NVIDIA = "NVIDIA", "NVIDIA"
        AMD = "AMD", "AMD"

    name = models.CharField(max_length=80, unique=True)
    slug = models.SlugField(max_length=80, unique=True)
    vendor = models.CharField(max_length=10, choices=Vendor.choices)
    memory_mib = models.IntegerField(
        validators=[positive("Memory (MiB)")],
        help_text="Exact memory as the driver reports it (nvidia-smi / rocm-smi), in MiB.",
    )
    marketed_memory = models.CharField(max_length=20, blank=True, help_text='As sold, e.g. "80GB".')
    usable_memory_mib = models.IntegerField(
        "Usable memory (MiB)", null=True, blank=True, validators=[positive("Usable memory (MiB)")],
        help_text="The total CUDA reports to PyTorch (torch.cuda.mem_get_info), which vLLM's "
                  "gpu_memory_utilization multiplies; below the nvidia-smi figure on some boards. "
                  "Empty = not recorded: the nvidia-smi figure stands in.",
    )
    usable_memory_source = models.CharField(
        max_length=300, blank=True, help_text="Where the usable figure comes from.",
    )
    architecture = models.CharField(
        max_length=20, choices=GPU_ARCHITECTURES, blank=True,
        help_text="The GPU's architecture: which engine runs which weights and KV cache on it "
                  "(sizing.engine_support). Empty = not recorded: no start command is offered for it.",
    )
    compute_capability = models.CharField(
        "Compute capability", max_length=5, blank=True,
        help_text='NVIDIA only: the CUDA compute capability as major.minor (e.g. "8.6"); empty on AMD.',
    )
    datasheet_url = models.URLField(max_length=300, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["vendor", "name"]
        constraints = [
            models.CheckConstraint(condition=Q(memory_mib__gt=0), name="catalog_gputype_memory_positive")
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        super().clean()
        vendor = self.serializable_value("vendor")
        problem = architecture_problem(vendor, self.architecture, self.compute_capability)
        if problem is not None:
            field, message = problem
            raise ValidationError({field: message})


class GpuAlias(models.Model):
    """Another name a marketplace's feed uses for a GPU type ("NVIDIA GeForce RTX 4090", "H100_SXM5").

    Looked up by its key (case, spaces, hyphens and underscores ignored, `catalog.gpu_names`). One name
    may stand for several GPU types told apart by their memory ("A100" for the 40GB and the 80GB board):
    a feed's record then takes the type whose datasheet memory is nearest the memory it reports."""

    name = models.CharField(max_length=120, help_text='As a feed writes it, e.g. "NVIDIA A100-SXM4-80GB".')
    key = models.CharField(max_length=120, editable=False, db_index=True)
    gpu_type = models.ForeignKey(GpuType, on_delete=models.CASCADE, related_name="aliases")
    notes = models.CharField(max_length=200, blank=True, help_text="Where the name is used, e.g. RunPod.")

    class Meta:
        ordering = ["name", "gpu_type"]
        constraints = [
            models.UniqueConstraint(fields=["key", "gpu_type"], name="catalog_gpualias_unique_key_type"),
        ]

    def __str__(self) -> str:
        return f"{self.name} → {self.gpu_type}" if self.gpu_type_id else self.name

    def save(self, *args, **kwargs):
        self.name = (self.name or "").strip()
        self.key = gpu_name_key(self.name)
        super().save(*args, **kwargs)

    def clean(self):
        super().clean()
        self.name = (self.name or "").strip()
        self.key = gpu_name_key(self.name)
        if not self.key:
            raise ValidationError({"name": "Name must contain letters or digits."})
        if self.gpu_type_id is not None:
            same = GpuAlias.objects.filter(key=self.key, gpu_type_id=self.gpu_type_id).exclude(pk=self.pk)
            if same.exists():
                raise ValidationError(
                    {"name": f"“{self.name}” already names {self.gpu_type} (case, spaces, hyphens and "
                             "underscores are ignored)."}
                )


class Tier(models.TextChoices):
    SECURE = "secure", "Secure"
    COMMUNITY = "community", "Community"


class Provider(models.Model):
    class FeedFormat(models.TextChoices):
        NODELODGE_V1 = "nodelodge-v1", "Node Lodge feed v1 (JSON)"
        VAST_OFFERS = "vast-offers", "Vast.ai offers (search offers JSON)"
        RUNPOD_GPU_TYPES = "runpod-gpu-types", "RunPod gpuTypes (GraphQL JSON)"
        LAMBDA_INSTANCE_TYPES = "lambda-instance-types", "Lambda instance types (JSON)"
        SKYPILOT_CATALOG = "skypilot-catalog", "SkyPilot catalog (vms.csv)"
        GPUHUNT_OFFERS = "gpuhunt-offers", "gpuhunt offers (CSV or JSON)"
        PRIME_AVAILABILITY = "prime-availability", "Prime Intellect availability (JSON)"

    name = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=120, unique=True)
    tier = models.CharField(max_length=10, choices=Tier.choices)
    feed_url = models.URLField(max_length=300, blank=True)
    feed_format = models.CharField(
        max_length=30, choices=FeedFormat.choices, default=FeedFormat.NODELODGE_V1
    )
    is_active = models.BooleanField(default=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name



def interconnect_speed_error(interconnect: str, gbps: int | None) -> str:
    """Why a machine's interconnect and its speed disagree ("" when they agree), as the table's check
    (catalog_machine_interconnect_speed) has it: a speed exactly when there is an interconnect. The admin
    and the provider feeds say it in these words."""
    if interconnect == Machine.Interconnect.NONE and gbps is not None:
        return (
            "Interconnect speed must be empty while the interconnect is “none”; "
            "name the interconnect or clear the speed."
        )
    if interconnect != Machine.Interconnect.NONE and gbps is None:
        label = dict(Machine.Interconnect.choices).get(interconnect, interconnect)
        return f"Interconnect speed is needed for {label}: give it in Gb/s per machine."
    return ""


# The columns that say in which markets a machine is offered and on what terms (`sizing.markets`).
MARKET_FIELDS = (
    "price_per_gpu_hour", "interruptible", "interruptible_price_per_gpu_hour", "interruption_notice_seconds",
    "interruption_frequency", "reserved_price_per_gpu_hour", "reserved_term_days",
)


def market_price_expression(choice: str):
    """The price per GPU-hour of a machine under the market `choice` (`sizing.markets.priced_in`), as a
    database expression: the listed price, or a cheaper one of the markets the choice lets in (a tie
    keeps the listed price, the same figure). A machine listed interruptible is offered at its listed
    price alone; a reserved price comes with its term (the table's check)."""
    listed = F("price_per_gpu_hour")
    spot = Case(When(interruptible=False, then=F("interruptible_price_per_gpu_hour")))
    allowed = [Coalesce(spot, listed)]
    if choice == ANY_MARKET:
        allowed.append(Coalesce(F("reserved_price_per_gpu_hour"), listed))
    return Least(listed, *allowed, output_field=models.DecimalField(max_digits=10, decimal_places=4))


class Machine(models.Model):
    class MemorySource(models.TextChoices):
        DATACENTER = "datacenter", "Datacenter"
        DATASHEET = "datasheet", "Manufacturer's datasheet"
        HOST = "host", "Reported by the host (unchecked)"
        UNKNOWN = "unknown", "Unknown"

    class Interconnect(models.TextChoices):
        NONE = "none", "None"
        ETHERNET = "ethernet", "Ethernet"
        INFINIBAND = "infiniband", "InfiniBand"
        ROCE = "roce", "RoCE (RDMA over Ethernet)"

    provider = models.ForeignKey(Provider, on_delete=models.CASCADE, related_name="machines")
    provider_machine_id = models.CharField(max_length=120)
    # A copy of provider.tier, kept by the database (triggers of migration 0014 on both databases,
    # whichever way a machine or provider is written). The wizard's main query filters on tier,
    # country, memory and price together; keeping tier on this table lets one partial index serve
    # that query without a join to Provider.
    tier = models.CharField(max_length=10, choices=Tier.choices, editable=False)
    # A copy of provider.is_active, kept the same way: the availability rule reads it in the counting
    # query, which has no join to Provider.
    provider_is_active = models.BooleanField(default=True, editable=False)
    gpu_type = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="machines")
    gpu_count = models.SmallIntegerField(
        validators=[
            MinValueValidator(1, message=f"GPU count must be between 1 and {MAX_GPUS_PER_MACHINE}."),
            MaxValueValidator(
                MAX_GPUS_PER_MACHINE, message=f"GPU count must be between 1 and {MAX_GPUS_PER_MACHINE}."
            ),
        ]
    )
    free_gpus = models.SmallIntegerField(
        validators=[MinValueValidator(0, message="Free GPUs cannot be negative.")]
    )
    memory_per_gpu_mib = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1, message="Memory per GPU must be a positive number of MiB.")],
        help_text="Empty = not reported; such a machine is never recommended.",
    )
    memory_source = models.CharField(
        max_length=12, choices=MemorySource.choices, default=MemorySource.UNKNOWN
    )
    memory_flag = models.CharField(
        max_length=200, blank=True, help_text="E.g. host-reported memory far from the datasheet."
    )
    country = models.CharField(
        max_length=2, blank=True, help_text="ISO 3166 alpha-2 code; empty = location unknown."
    )
    region = models.CharField(max_length=120, blank=True)
    # What a cluster of machines needs (several machines serving one model): the datacenter they stand
    # in and the network between them.
    site = models.CharField(
        max_length=120, blank=True, help_text="The datacenter the machine is in, as the provider names it."
    )
    interconnect = models.CharField(
        max_length=12, choices=Interconnect.choices, default=Interconnect.NONE,
        help_text="The network between this machine and the others at its site.",
    )
    interconnect_gbps = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1, message="Interconnect speed must be a positive number of Gb/s.")],
        help_text="Per machine, in Gb/s. Empty when there is no interconnect.",
    )
    price_per_gpu_hour = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0.0001"), message="Price per GPU-hour must be above zero.")],
        help_text="USD per GPU per hour.",
    )
    interruptible = models.BooleanField(
        default=False,
        help_text="The listed price is itself interruptible (no on-demand price): the machine is offered in "
                  "the interruptible market at that price.",
    )
    # The markets besides the listed price (`sizing.markets`). Empty = not offered there, or not said.
    interruptible_price_per_gpu_hour = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(Decimal("0.0001"), message="Interruptible price must be above zero.")],
        help_text="USD per GPU per hour: the spot price, or the lowest bid taken (bid floor). "
                  "Empty = not offered interruptible.",
    )
    interruption_notice_seconds = models.IntegerField(
        null=True, blank=True,
        validators=[MinValueValidator(0, message="Interruption notice cannot be negative (0 = no notice).")],
        help_text="Notice before an interruptible machine is taken back, in seconds (0 = none). "
                  "Empty = the provider does not say.",
    )
    interruption_frequency = models.CharField(
        max_length=120, blank=True,
        help_text="How often the provider says interruptible machines are taken back, in its words. "
                  "Empty = not said.",
    )
    reserved_price_per_gpu_hour = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True,
        validators=[MinValueValidator(Decimal("0.0001"), message="Reserved price must be above zero.")],
        help_text="USD per GPU per hour when prepaid or committed for the term below. Empty = not offered.",
    )
    reserved_term_days = models.IntegerField(
        null=True, blank=True,
        validators=[MinValueValidator(1, message="Reserved term must be at least one day.")],
        help_text="The term the reserved price is paid for, in days.",
    )
    # The price per GPU-hour a machine is listed at under each market preference besides on demand only
    # (`sizing.markets.priced_in`), kept by the database so the fleet counts and the band walks read and
    # index it as they do the listed price. See `market_price_expression`.
    interruptible_allowed_price = GeneratedField(
        expression=market_price_expression(INTERRUPTIBLE),
        output_field=models.DecimalField(max_digits=10, decimal_places=4), db_persist=True,
    )
    any_market_price = GeneratedField(
        expression=market_price_expression(ANY_MARKET),
        output_field=models.DecimalField(max_digits=10, decimal_places=4), db_persist=True,
    )
    # Reliability and stock as the feed gives them; never estimated (empty = not reported).
    reliability = models.DecimalField(
        max_digits=5, decimal_places=4, null=True, blank=True,
        validators=[
            MinValueValidator(Decimal("0"), message="Reliability must be between 0 and 1."),
            MaxValueValidator(Decimal("1"), message="Reliability must be between 0 and 1."),
        ],
        help_text="0 to 1, as the provider measures it. Empty = not reported.",
    )
    reliability_measures = models.CharField(
        max_length=200, blank=True,
        help_text="What the reliability figure measures, as the provider defines it.",
    )

    class Stock(models.TextChoices):
        HIGH = "high", "High"
        MEDIUM = "medium", "Medium"
        LOW = "low", "Low"
        IN_STOCK = "in_stock", "In stock (level not said)"
        OUT = "out", "Out of stock"

    stock = models.CharField(
        max_length=10, choices=Stock.choices, blank=True,
        help_text="As the feed reports it. Empty = not reported.",
    )
    booking_limit_hours = models.IntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1, message="Booking limit must be at least one hour (empty = none).")],
        help_text="Empty = no limit.",
    )
    is_available = models.BooleanField(
        default=True, help_text="Online (Community) or in stock (Secure)."
    )
    last_seen_at = models.DateTimeField(null=True, blank=True)
    gone_at = models.DateTimeField(null=True, blank=True, help_text="Missing from the provider's feed.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider", "provider_machine_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "provider_machine_id"], name="catalog_machine_unique_provider_id"
            ),
            models.CheckConstraint(
                condition=Q(free_gpus__lte=models.F("gpu_count")), name="catalog_machine_free_le_count"
            ),
            models.CheckConstraint(condition=Q(free_gpus__gte=0), name="catalog_machine_free_nonnegative"),
            models.CheckConstraint(
                condition=Q(gpu_count__gte=1, gpu_count__lte=MAX_GPUS_PER_MACHINE),
                name="catalog_machine_gpu_count_range",
            ),
            models.CheckConstraint(
                condition=Q(price_per_gpu_hour__gt=0), name="catalog_machine_price_positive"
            ),
            _positive_or_null("memory_per_gpu_mib", "catalog_machine_memory_positive"),
            _positive_or_null("booking_limit_hours", "catalog_machine_booking_limit_positive"),
            _positive_or_null("interruptible_price_per_gpu_hour", "catalog_machine_spot_price_positive"),
            _positive_or_null("reserved_price_per_gpu_hour", "catalog_machine_reserved_price_positive"),
            models.CheckConstraint(
                condition=Q(interruption_notice_seconds__isnull=True) | Q(interruption_notice_seconds__gte=0),
                name="catalog_machine_interruption_notice_nonnegative",
            ),
            models.CheckConstraint(
                condition=Q(reserved_price_per_gpu_hour__isnull=True, reserved_term_days__isnull=True)
                | Q(reserved_price_per_gpu_hour__isnull=False, reserved_term_days__gte=1),
                name="catalog_machine_reserved_term",
            ),
            models.CheckConstraint(
                condition=Q(reliability__isnull=True, reliability_measures="")
                | (Q(reliability__gte=0, reliability__lte=1) & ~Q(reliability_measures="")),
                name="catalog_machine_reliability_measured",
            ),
            models.CheckConstraint(
                condition=Q(interconnect="none", interconnect_gbps__isnull=True)
                | (~Q(interconnect="none") & Q(interconnect_gbps__gte=1)),
                name="catalog_machine_interconnect_speed",
            ),
        ]
        indexes = [
            # The wizard: available machines of a tier in some countries with enough memory, by price.
            models.Index(
                fields=["tier", "country", "memory_per_gpu_mib", "price_per_gpu_hour"],
                condition=Q(is_available=True),
                name="catalog_machine_wizard_idx",
            ),
            # Freshness checks and the stale sweep.
            models.Index(fields=["is_available", "last_seen_at"], name="catalog_machine_fresh_idx"),
            models.Index(fields=["last_seen_at"], name="catalog_machine_seen_idx"),
            # The cluster sites (`catalog.clusters`): the few offered machines that may join a cluster,
            # by site key then price, so the sites statement reads them in its groups' order; with every
            # other column it reads, so a vacuumed table answers from the index alone (last_seen_at and
            # free_gpus are indexed already, so carrying them here costs the refresh no HOT update). The
            # provider's ids and booking limits are read for the clusters shown only, by id. The reliability
            # is what a minimum reliability compares (a feed's refresh rewrites it rarely). The prices under
            # the other market preferences (`catalog.market_columns`) are what a cluster is priced at there.
            models.Index(
                fields=["provider", "site", "gpu_type", "gpu_count", "memory_per_gpu_mib", "interconnect",
                        "country", "region", "price_per_gpu_hour", "id"],
                include=["last_seen_at", "free_gpus", "interconnect_gbps", "reliability",
                         "interruptible_allowed_price", "any_market_price"],
                condition=cluster_index_condition(),
                name="catalog_machine_cluster_idx",
            ),
        ]

    def __str__(self) -> str:
        provider = self.provider.name if self.provider_id else "?"
        return f"{provider} {self.provider_machine_id} ({self.gpu_count}x)"

    def save(self, *args, **kwargs):
        self.country = (self.country or "").strip().upper()
        self.site = (self.site or "").strip()
        self.interruptible_price_per_gpu_hour = interruptible_price(
            self.price_per_gpu_hour, self.interruptible, self.interruptible_price_per_gpu_hour
        )
        if self.provider_id:
            # What the database's triggers will write, so this instance reads the same after saving.
            self.tier = self.provider.tier
            self.provider_is_active = self.provider.is_active
        update_fields = kwargs.get("update_fields")
        if update_fields is not None:
            kwargs["update_fields"] = sorted({*update_fields, "tier", "provider_is_active"})
        super().save(*args, **kwargs)

    def clean(self):
        super().clean()
        errors = {}
        if self.country:
            code = self.country.strip().upper()
            if not is_country_code(code):
                errors["country"] = (
                    f"Country must be an ISO 3166 alpha-2 code such as DE or US; “{self.country}” is not one."
                )
            else:
                self.country = code
        if self.gpu_count is not None and self.free_gpus is not None and self.free_gpus > self.gpu_count:
            errors["free_gpus"] = (
                f"Free GPUs ({self.free_gpus}) cannot exceed the machine's GPU count ({self.gpu_count})."
            )
        if self.memory_per_gpu_mib is None and self.memory_source != self.MemorySource.UNKNOWN:
            errors["memory_source"] = "Memory source must be “unknown” while no memory per GPU is given."
        self.site = (self.site or "").strip()
        error = interconnect_speed_error(self.interconnect, self.interconnect_gbps)
        if error and "interconnect_gbps" not in errors:
            errors["interconnect_gbps"] = error
        self.interruption_frequency = (self.interruption_frequency or "").strip()
        self.reliability_measures = (self.reliability_measures or "").strip()
        terms = {name: getattr(self, name) for name in MARKET_FIELDS}
        for field, problem in market_problems(**terms).items():
            errors.setdefault(field, problem)
        problem = reliability_problem(self.reliability, self.reliability_measures)
        if problem:
            field = "reliability" if self.reliability is None else "reliability_measures"
            errors.setdefault(field, problem)
        if errors:
            raise ValidationError(errors)

    def market_prices(self) -> tuple[MarketPrice, ...]:
        """The markets this machine is offered in, with their prices and terms."""
        return market_prices(**{name: getattr(self, name) for name in MARKET_FIELDS})


class MeasuredSpeed(models.Model):
    """A speed measured on one machine. Speeds are never estimated, only shown where measured.

    A measurement holds for the GPU type it ran on: when the machine's GPU type changes, its
    measurements are dropped (`catalog.services.drop_speeds_of_other_gpu_types`)."""

    class ModelKind(models.TextChoices):
        LANGUAGE = "language", "Language model"
        IMAGE = "image", "Image pipeline"
        SPEECH = "speech", "Speech model"

    class Unit(models.TextChoices):
        TOKENS_PER_SECOND = "tokens/s", "tokens/s"
        IMAGES_PER_MINUTE = "images/min", "images/min"

    class Precision(models.IntegerChoices):
        BITS_16 = 16, "16-bit"
        BITS_8 = 8, "8-bit"
        BITS_4 = 4, "4-bit"

    class Source(models.TextChoices):
        FEED = "feed", "Provider feed"
        STAFF = "staff", "Entered by staff"

    machine = models.ForeignKey(Machine, on_delete=models.CASCADE, related_name="measured_speeds")
    gpu_type = models.ForeignKey(
        GpuType, on_delete=models.CASCADE, null=True, blank=True, related_name="+",
        help_text="The GPU type measured on; empty = the machine's (filled in on save).",
    )
    model_kind = models.CharField(max_length=10, choices=ModelKind.choices)
    model_slug = models.SlugField(max_length=120)
    precision = models.PositiveSmallIntegerField(choices=Precision.choices)
    value = models.DecimalField(
        max_digits=12,
        decimal_places=3,
        validators=[MinValueValidator(Decimal("0.001"), message="A measured speed must be above zero.")],
        help_text="Total over the GPUs measured together (tokens/s: output tokens per second).",
    )
    unit = models.CharField(max_length=12, choices=Unit.choices)
    gpus = models.SmallIntegerField(
        default=1,
        validators=[
            MinValueValidator(1, message=f"GPUs measured must be between 1 and {MAX_GPUS_PER_MACHINE}."),
            MaxValueValidator(
                MAX_GPUS_PER_MACHINE, message=f"GPUs measured must be between 1 and {MAX_GPUS_PER_MACHINE}."
            ),
        ],
        help_text="GPUs of the machine the measurement ran on together (tensor parallelism).",
    )
    engine = models.CharField(
        max_length=MEASUREMENT_TEXT_LENGTHS["engine"], blank=True, help_text='Inference engine, e.g. "vLLM".'
    )
    engine_version = models.CharField(max_length=MEASUREMENT_TEXT_LENGTHS["engine_version"], blank=True)
    concurrency = models.IntegerField(
        null=True, blank=True, validators=[positive("Concurrency")], help_text="Concurrent requests."
    )
    input_tokens = models.IntegerField(
        null=True, blank=True, validators=[positive("Input length")], help_text="Input tokens per request."
    )
    output_tokens = models.IntegerField(
        null=True, blank=True, validators=[positive("Output length")], help_text="Output tokens per request."
    )
    measured_at = models.DateTimeField()
    measured_by = models.CharField(
        max_length=MEASUREMENT_TEXT_LENGTHS["measured_by"], blank=True, help_text="Who ran the measurement."
    )
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.STAFF)

    class Meta:
        ordering = ["machine", "model_slug", "precision", "-measured_at"]
        constraints = [
            models.CheckConstraint(condition=Q(value__gt=0), name="catalog_speed_value_positive"),
            models.CheckConstraint(
                condition=Q(gpus__gte=1, gpus__lte=MAX_GPUS_PER_MACHINE), name="catalog_speed_gpus_range"
            ),
        ]
        indexes = [
            # The throughput plan and the price-per-million sort: speeds of one model and precision.
            models.Index(fields=["model_slug", "precision", "unit"], name="catalog_speed_model_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.model_slug} {self.precision}-bit: {self.value} {self.unit}"

    def save(self, *args, **kwargs):
        if self.gpu_type_id is None and self.machine_id:
            machines = Machine.objects.filter(pk=self.machine_id)
            self.gpu_type_id = machines.values_list("gpu_type_id", flat=True).first()
        super().save(*args, **kwargs)

    def clean(self):
        super().clean()
        if self.machine_id and self.gpus and self.gpus > self.machine.gpu_count:
            raise ValidationError(
                {"gpus": f"GPUs measured ({self.gpus}) cannot exceed the machine's GPU count "
                 f"({self.machine.gpu_count})."}
            )
