"""Print the wizard's whole result in a terminal table (or the API's JSON)."""
from __future__ import annotations

import json

from django.core.management.base import BaseCommand

from nodelodge.recommendations.answer import recommendation_for
from nodelodge.recommendations.query import QueryError
from nodelodge.wizard.api import recommendation_payload
from sizing.limits import API_LIMIT
from sizing.units import fmt_gib

from ._query import PREFERENCE_OPTIONS, QUERY_OPTIONS, add_query_arguments, fail, query_from_options


class Command(BaseCommand):
    help = "Machines a workload fits on, cheapest first (same answer as the wizard and the API)."

    def add_arguments(self, parser):
        add_query_arguments(parser, preferences=True)
        parser.add_argument("--limit", type=int, default=20, help="rows to print (table only)")

    def handle(self, *args, **options):
        query = query_from_options(self, options, QUERY_OPTIONS + PREFERENCE_OPTIONS)
        try:
            # The JSON is the API's, so it lists as many machines as the API does.
            result = recommendation_for(query, default_limit=API_LIMIT)
        except QueryError as error:
            fail(self, error.errors)
        payload = recommendation_payload(result)
        if options["json"]:
            self.stdout.write(json.dumps(payload, indent=2))
            return
        breakdown = result.breakdown
        self.stdout.write(f"{breakdown.title}: {fmt_gib(breakdown.total_bytes)} needed")
        for item in breakdown.items:
            self.stdout.write(f"  {item.name:<28} {fmt_gib(item.bytes):>14}   {item.formula}")
        machines = payload["machines"]
        self.stdout.write("")
        self.stdout.write(f"Recommended machines: {len(machines)}")
        header = f"{'#':>3}  {'provider':<22} {'tier':<9} {'gpu':<16} {'used':>4} {'GiB/GPU':>8} " \
                 f"{'where':<6} {'$/h':>9} {'$/M tok':>10} {'budget':>10}  confidence"
        self.stdout.write(header)
        for rank, m in enumerate(machines[: options["limit"]], start=1):
            hours = f"{m['budget_hours']:.1f} h" if m["budget_hours"] is not None else "-"
            where = m["country"] or "?"
            self.stdout.write(
                f"{rank:>3}  {m['provider'][:22]:<22} {m['tier']:<9} {m['gpu_type'][:16]:<16} "
                f"{m['gpus_used']:>4} {m['memory_per_gpu_gib']:>8.2f} {where:<6} {m['price_per_hour']:>9} "
                f"{per_million(m):>10} "
                f"{hours:>10}  {m['confidence']}{capacity(m)}"
            )
            markets = m.get("markets", [])
            if markets and m["market"] != markets[0]["market"]:  # the price above is not the listed one
                self.stdout.write(f"       priced {m['market']}: ${m['price_per_gpu_hour']} per GPU-hour")
            for market in markets:  # every other market (by default all but the listed price, above)
                if market["market"] == m["market"]:
                    continue
                terms = f" ({market['terms_text']})" if market["terms_text"] else ""
                self.stdout.write(f"       {market['market']} ${market['price_per_hour']}/h{terms}")
            if m.get("reliability") is not None or m.get("stock"):
                self.stdout.write(f"       {m['reliability_text']}; {m['stock_text']}")
            if m.get("gguf_file"):
                published = "published" if m["gguf_published"] else "no published file"
                self.stdout.write(f"       GGUF {m['quantization']}: {m['gguf_file']} ({published})")
            if m.get("command"):
                self.stdout.write(f"       {m['command']}")
            if m.get("gpu_support_text"):
                self.stdout.write(f"       {m['gpu_support_text']}")
            if (m.get("alternative") or {}).get("command"):
                self.stdout.write(f"       {m['alternative']['command']}")
        if not machines and payload["empty_reason"]:
            self.stdout.write(payload["empty_reason"])
        plan = payload.get("throughput_plan")
        if plan is not None:
            self.write_plan(plan)
        if payload["clusters"] or payload["clusters_note"]:
            self.write_clusters(payload)
        self.stdout.write("")
        self.stdout.write("Constraints applied:")
        for constraint in payload["constraints"]:
            self.stdout.write(f"  {constraint['label']}: {constraint['value']}")

    def write_clusters(self, payload: dict) -> None:
        self.stdout.write("")
        self.stdout.write(f"Clusters (tensor parallel within a machine × pipeline parallel across machines, "
                          f"under vLLM): {payload['clusters_total']}")
        for rank, cluster in enumerate(payload["clusters"], start=1):
            hours = f"{cluster['hours_covered']:.1f} h" if cluster["hours_covered"] is not None else "-"
            self.stdout.write(
                f"{rank:>3}  {cluster['machines']} × ({cluster['gpus_per_machine']} × {cluster['gpu_type']}) "
                f"{cluster['provider']} {cluster['site']} {cluster['country'] or '?'}  "
                f"TP {cluster['tensor_parallel']} × PP {cluster['pipeline_parallel']}  "
                f"{cluster['need_per_gpu_gib']:.2f} of {cluster['budget_per_gpu_gib']:.2f} GiB per GPU  "
                f"${cluster['price_per_hour']}/h  budget {hours}  {cluster['confidence']}"
            )
            self.stdout.write(f"       machines: {', '.join(map(str, cluster['machine_ids']))}")
            if any(market != "on_demand" for market in cluster["machine_markets"]):
                priced = zip(cluster["machine_ids"], cluster["machine_markets"],
                             cluster["machine_prices_per_hour"], strict=True)
                self.stdout.write("       markets: " + ", ".join(
                    f"{machine_id} {market} ${price}/h" for machine_id, market, price in priced))
            if cluster["interruption_note"]:
                self.stdout.write(f"       {cluster['interruption_note']}")
            for item in cluster["items"]:
                self.stdout.write(f"       {item['name']:<34} {item['gib']:>8.2f} GiB   {item['formula']}")
            for command in cluster["vllm_commands"]:
                self.stdout.write(f"       vLLM: {command}")
            for command in cluster["sglang_commands"]:
                self.stdout.write(f"       SGLang: {command}")
            if cluster["sglang_note"]:
                self.stdout.write(f"       SGLang: {cluster['sglang_note']}")
            if cluster["gpu_support_text"]:
                self.stdout.write(f"       {cluster['gpu_support_text']}")
            alternative = cluster["alternative"] or {"vllm_commands": [], "sglang_commands": []}
            for command in alternative["vllm_commands"]:
                self.stdout.write(f"       vLLM: {command}")
            for command in alternative["sglang_commands"]:
                self.stdout.write(f"       SGLang: {command}")
        if payload["clusters_note"]:
            self.stdout.write(payload["clusters_note"])

    def write_plan(self, plan: dict) -> None:
        self.stdout.write("")
        self.stdout.write(
            f"Throughput plan for {plan['target_text']} at {plan['efficiency_percent']} % efficiency, "
            f"{plan['redundancy']} spare: {plan['without_speed_text']}."
        )
        if not plan["plans"]:
            self.stdout.write(plan["empty_reason"])
        for entry in plan["plans"]:
            self.stdout.write(
                f"{entry['label']}: ${entry['price_per_hour']}/h, {entry['gpus']} GPUs "
                f"({entry['productive_gpus']} productive + {entry['spare_gpus']} redundancy), "
                f"${entry['price_per_million_tokens_at_target']} per million tokens at the target"
            )
            if entry["search_text"]:
                self.stdout.write(entry["search_text"])
            if entry["interruption_note"]:
                self.stdout.write(entry["interruption_note"])
            for machine in entry["machines"]:
                market = f" {machine['market']}" if machine["market"] != "on_demand" else ""
                self.stdout.write(
                    f"    {machine['provider'][:22]:<22} {machine['provider_machine_id']:<12} "
                    f"{machine['gpus']:>2} × {machine['gpu_type']:<16} "
                    f"{machine['tokens_per_s_per_gpu_text']:>18}/GPU "
                    f"${machine['price_per_hour']}/h{market}"
                )
            for step in entry["steps"]:
                self.stdout.write(f"    {step}")


def capacity(machine: dict) -> str:
    """What the machine holds: requests at the asked context, context at the asked requests."""
    if machine.get("max_requests_at_context") is None:
        return ""
    return (f"  holds {machine['max_requests_at_context']:,} requests at the context, "
            f"{machine['max_context_at_requests']:,} tokens at the requests")


def per_million(machine: dict) -> str:
    value = machine.get("price_per_million_tokens")
    if value is not None:
        return value
    if machine.get("price_per_million_tokens_text") is None:
        return "-"
    # measured with every layer on the GPUs, which this answer does not do
    return "layers on CPU" if machine.get("measured_speeds_note") else "no speed"
