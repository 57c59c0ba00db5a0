"""Accounts: sign-up (`signup`) keeps Django's users; scripts call the API with tokens made here."""
from django.conf import settings
from django.db import models


class ApiToken(models.Model):
    """A per-user token for scripts calling the API: `Authorization: Bearer <token>`. Only its
    SHA-256 is stored; the token itself is shown once, when made."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12, help_text="The token's first characters, to tell tokens apart.")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Made by Watches first: the table keeps its name (and its rows) in this app.
        db_table = "watches_apitoken"
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.owner} {self.prefix}…"
