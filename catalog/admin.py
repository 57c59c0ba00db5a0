"""Staff edit the catalog here. Validation lives in the models' clean(), so the admin forms show it."""
from collections.abc import Sequence
from typing import Any, ClassVar, cast

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _

from catalog import services
from catalog.hf_config import ConfigError, parse_config
from catalog.models import (
    GpuAlias,
    GpuType,
    ImageComponent,
    ImagePipeline,
    LanguageModel,
    Machine,
    MeasuredSpeed,
    Provider,
    SpeechModel,
)
from sizing.offers import SPEED_RECORD_FIELDS


class CatalogAdmin(admin.ModelAdmin):
    # Published configurations and datasheets are served over https.
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}


class ConfigImportForm(forms.Form):
    name = forms.CharField(max_length=120, label=_("Name"))
    slug = forms.SlugField(
        max_length=120, label=_("Slug"), help_text=_("An existing slug updates that model.")
    )
    config_json = forms.CharField(
        label="config.json", widget=forms.Textarea(attrs={"rows": 18, "cols": 90}),
        help_text=_("Paste the model's published config.json."),
    )
    config_url = forms.URLField(max_length=300, required=False, label=_("Config URL"), assume_scheme="https")
    parameters = forms.IntegerField(
        min_value=1, required=False, label=_("Parameters"),
        help_text=_("Exact parameter count. config.json does not state it; left empty, it is recounted from "
                    "the configuration's figures, module by module."),
    )
    parameters_published = forms.CharField(max_length=60, required=False, label=_("Parameters as published"))
    license = forms.CharField(max_length=120, required=False, label=_("License"))

    def clean(self):
        cleaned = cast(dict[str, Any], super().clean())  # ModelForm.clean returns cleaned_data
        text = cleaned.get("config_json")
        if text:
            try:
                parse_config(text)
            except ConfigError as error:
                self.add_error("config_json", str(error))
        return cleaned


class ImageComponentInline(admin.TabularInline):
    model = ImageComponent
    extra = 0
    fields = ("order", "name", "role", "parameters")


@admin.register(LanguageModel)
class LanguageModelAdmin(CatalogAdmin):
    list_display = (
        "name", "slug", "family", "parameters", "active_parameters", "parameters_published", "layers",
        "attention_heads", "kv_heads", "head_dim", "max_context", "license", "is_active",
    )
    list_filter = ("is_active", "license")
    search_fields = ("name", "slug", "license", "hf_id")
    prepopulated_fields = {"slug": ("name",)}
    change_list_template = "admin/catalog/languagemodel/change_list.html"
    readonly_fields = ("missing_figures",)

    @admin.display(description=_("Missing figures"))
    def missing_figures(self, obj):
        missing = obj.missing_values() if obj.pk else []
        return ", ".join(missing) or "none"

    def get_urls(self):
        return [
            path(
                "import-config/",
                self.admin_site.admin_view(self.import_config_view),
                name="catalog_languagemodel_import_config",
            ),
            *super().get_urls(),
        ]

    def import_config_view(self, request):
        if not self.has_add_permission(request) or not self.has_change_permission(request):
            return redirect("admin:index")
        form = ConfigImportForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                row, created = services.import_language_model(
                    name=data["name"], slug=data["slug"], config_text=data["config_json"],
                    config_url=data["config_url"], parameters=data["parameters"],
                    parameters_published=data["parameters_published"], license=data["license"],
                )
            except ValidationError as error:
                for field, errors in error.message_dict.items():
                    form.add_error(None, f"{field}: {' '.join(errors)}")
            else:
                done = _("Created %(model)s from its config.json.") if created else _(
                    "Updated %(model)s from its config.json."
                )
                self.message_user(request, done % {"model": row.name}, messages.SUCCESS)
                return redirect(reverse("admin:catalog_languagemodel_change", args=[row.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": _("Create or update a language model from config.json"),
        }
        return TemplateResponse(request, "admin/catalog/languagemodel/import_config.html", context)


@admin.register(ImagePipeline)
class ImagePipelineAdmin(CatalogAdmin):
    list_display = ("name", "slug", "native_resolution", "parameters_published", "license", "is_active")
    list_filter = ("is_active",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [ImageComponentInline]


@admin.register(SpeechModel)
class SpeechModelAdmin(CatalogAdmin):
    list_display = (
        "name", "slug", "parameters", "parameters_published", "encoder_layers", "decoder_layers", "d_model",
        "attention_heads", "is_active",
    )
    list_filter = ("is_active",)
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}


class GpuAliasInline(admin.TabularInline):
    model = GpuAlias
    extra = 0
    fields = ("name", "notes")
    verbose_name = _("Name in provider feeds")
    verbose_name_plural = _("Names in provider feeds")


@admin.register(GpuType)
class GpuTypeAdmin(CatalogAdmin):
    list_display = ("name", "vendor", "architecture", "compute_capability", "marketed_memory", "memory_mib",
                    "usable_memory_mib")
    list_filter = ("vendor", "architecture")
    search_fields = ("name",)
    prepopulated_fields = {"slug": ("name",)}
    inlines = [GpuAliasInline]


@admin.register(GpuAlias)
class GpuAliasAdmin(CatalogAdmin):
    """The names provider feeds give GPU types; a feed's record naming none of them is refused."""

    list_display = ("name", "gpu_type", "notes")
    list_filter = ("gpu_type",)
    search_fields = ("name", "key", "gpu_type__name", "notes")
    list_select_related = ("gpu_type",)
    autocomplete_fields = ("gpu_type",)
    fields = ("name", "gpu_type", "notes")


@admin.register(Provider)
class ProviderAdmin(CatalogAdmin):
    list_display = ("name", "tier", "feed_format", "feed_url", "is_active")
    list_filter = ("tier", "is_active", "feed_format")
    search_fields = ("name", "slug")
    prepopulated_fields = {"slug": ("name",)}
    actions: Sequence[Any] = ()  # ModelAdmin's default; the refresh app adds its own

    def save_model(self, request, obj, form, change):
        services.save_provider(obj)


SPEED_FIELDS = ("model_kind", *SPEED_RECORD_FIELDS)


class MeasuredSpeedInline(admin.StackedInline):
    model = MeasuredSpeed
    extra = 0
    fields = SPEED_FIELDS
    readonly_fields = ("source",)


@admin.register(Machine)
class MachineAdmin(CatalogAdmin):
    list_display: tuple[str, ...] = (
        "provider_machine_id", "provider", "tier", "gpu_type", "gpu_count", "free_gpus", "memory_per_gpu_mib",
        "memory_source", "country", "site", "interconnect", "interconnect_gbps", "price_per_gpu_hour",
        "interruptible", "is_available", "last_seen_at",
    )
    list_filter: ClassVar[tuple[Any, ...]] = (
        "tier", "is_available", "memory_source", "interruptible", "stock", "interconnect", "gpu_type",
        "country", "provider",
    )
    search_fields = ("provider_machine_id", "provider__name", "gpu_type__name", "region", "country", "site")
    list_select_related: ClassVar[tuple[str, ...]] = ("provider", "gpu_type")
    autocomplete_fields = ("provider", "gpu_type")
    readonly_fields: ClassVar[tuple[str, ...]] = ("tier", "created_at", "updated_at")
    inlines = [MeasuredSpeedInline]
    list_per_page = 100

    def save_model(self, request, obj, form, change):
        services.save_machine(obj)
    fieldsets: ClassVar[tuple[Any, ...]] = (
        (None, {"fields": ("provider", "tier", "provider_machine_id", "gpu_type", "gpu_count", "free_gpus")}),
        ("GPU memory", {"fields": ("memory_per_gpu_mib", "memory_source", "memory_flag")}),
        ("Location", {"fields": ("country", "region", "site")}),
        ("Interconnect", {"fields": ("interconnect", "interconnect_gbps")}),
        ("Terms", {"fields": ("price_per_gpu_hour", "interruptible", "booking_limit_hours")}),
        ("Markets", {
            "fields": ("interruptible_price_per_gpu_hour", "interruption_notice_seconds",
                       "interruption_frequency", "reserved_price_per_gpu_hour", "reserved_term_days"),
            "description": "The on-demand price is the price per GPU-hour above (unless the machine is "
                           "listed interruptible). Empty = not offered in that market, or not said.",
        }),
        ("Reliability and stock", {"fields": ("reliability", "reliability_measures", "stock")}),
        ("Status", {"fields": ("is_available", "last_seen_at", "gone_at", "created_at", "updated_at")}),
    )


@admin.register(MeasuredSpeed)
class MeasuredSpeedAdmin(CatalogAdmin):
    list_display = (
        "machine", "model_kind", "model_slug", "precision", "value", "unit", "gpus", "engine",
        "engine_version", "concurrency", "measured_at", "measured_by", "source",
    )
    list_filter = ("model_kind", "unit", "precision", "source", "engine")
    search_fields = ("model_slug", "machine__provider_machine_id", "engine", "measured_by")
    fields = ("machine", "gpu_type", *SPEED_FIELDS)
    readonly_fields = ("gpu_type", "source")
    list_select_related = ("machine__provider",)
    raw_id_fields = ("machine",)
