"""Every limit on an input, once: beyond these a figure is a typo, not a workload.

The engine refuses past them, and the forms, the API and the catalog feeds read the same names.
"""
from decimal import Decimal

# --- the memory estimate --------------------------------------------------------------------------------
MAX_CONTEXT = 10_000_000  # tokens per request (or a fine-tuning sequence)
MAX_REQUESTS = 100_000  # concurrent requests, a batch size or audio streams
MAX_LORA_RANK = 1024  # and at most the model's hidden size
MAX_BEAMS = 64
MAX_NOTEBOOK_GIB = 10_000  # GPU memory a notebook asks for, and memory per GPU as a filter
# --- the vLLM budget and the GPU what-if -----------------------------------------------------------------
MAX_GPU_MEMORY_GIB = 10_000  # one GPU's memory a what-if may name
MAX_PARALLEL = 1024  # tensor- or pipeline-parallel size
# Decimal places a GPU memory utilization may have (vLLM takes any float in (0, 1]): bounds its digits.
UTILIZATION_PLACES = 15
MAX_BATCHED_TOKENS = 10_000_000  # max_num_batched_tokens
MAX_NUM_SEQS = 100_000  # max_num_seqs
# The most GPUs one machine has, and so the widest split tensor parallelism may use (`sizing.fit`).
MAX_GPUS_PER_MACHINE = 16

# --- the two simpler calculators (SPEC §8) --------------------------------------------------------------
MAX_PARAMETERS = 10**15  # the rule of thumb's parameter count
MAX_REDUNDANCY_GPUS = 10_000  # spare GPUs of the GPU-count calculator
MAX_GPU_COUNT_TARGET = Decimal("1e12")  # tokens/s the GPU-count calculator's form accepts
MAX_GPU_COUNT_MEASURED = Decimal("1e9")  # tokens/s per GPU it accepts

# --- the throughput plan --------------------------------------------------------------------------------
MAX_REDUNDANCY = 64  # spare model copies
MAX_TARGET_TOKENS_PER_S = Decimal("100000000")  # 10^8 tokens/s: more than any fleet serves
# Steps one plan search may take past its first plan (sizing.throughput_plan.search.SearchBudget):
# about a quarter of a second of Python; a search that needs more says its plan is the best found.
MAX_PLAN_SEARCH_STEPS = 20_000

# --- money ----------------------------------------------------------------------------------------------
# Prices are kept to four places: as integers they count 1/10,000 of a dollar.
PRICE_UNITS = 10_000
MAX_PRICE_PER_GPU_HOUR = Decimal("10000")  # a feed's price beyond this is garbage
# An interruptible Launch's bid per GPU-hour: no more than any price a feed may list (and no more than
# the machine's on-demand price where it has one, `sizing.markets.bid_ceiling`).
MAX_BID_PER_GPU_HOUR = MAX_PRICE_PER_GPU_HOUR
MAX_MONEY = Decimal("1000000000")  # a budget or a price limit typed into a query

# --- the query and its listing ------------------------------------------------------------------------
MAX_COUNTRY_ITEMS = 300  # countries and regions one query may name
MAX_LIMIT = 1000  # machines listed in one answer; all are counted
PAGE_LIMIT = 25  # machines the page lists when the query names no limit
# Machines the page lists at most (a row is about 1.5 ms of template and 3 KB); the API's is MAX_LIMIT.
PAGE_MAX_LIMIT = 200
API_LIMIT = 100  # machines the API lists when the query names no limit
MAX_PAGE = 100_000  # a page number past this is a typo (pages past the list's window are refused in words)
