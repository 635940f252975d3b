"""Accumulation merging: ``d = e1 … d = d + e2`` → ``d = e1 + e2``, and ``d[i] = a …
d[i] += b`` → ``d[i] = a + b``, when nothing in between reads or changes what they use.

Sums are kept to at most :data:`MAX_MERGED_TERMS` terms, so that code stays shallow
(every pass recurses into expressions).
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter

import gast

from s2sgrad.compiler.optimize.facts import facts_after_merging
from s2sgrad.compiler.optimize.statements import (
    accumulates,
    is_comment,
    is_compound,
    item_target,
    sum_length,
    value_reads,
)
from s2sgrad.compiler.syntax import names_read

__all__ = ["merge_accumulations", "merge_item_updates", "MAX_MERGED_TERMS"]

MAX_MERGED_TERMS = 24  # terms of a sum that accumulation merging builds (code is recursed)


def merge_accumulations(optimizer, body):
    """``d = e1 … d = d + e2`` → ``d = e1 + e2`` when nothing in between reads ``d``."""
    cache = optimizer.facts
    result = list(body)
    facts_at = cache.of_each(result)
    assigned = list(map(attrgetter("assigned"), facts_at))
    BinOp = gast.BinOp
    # Only d = d + e is merged, and only into itself: a statement that is none at the start
    # becomes none (the positions after the one at hand are not changed yet)
    candidates = [
        index
        for index, (statement, target) in enumerate(zip(result, assigned))
        if target is not None and type(statement.value) is BinOp and accumulates(statement, target)
    ]
    if not candidates:
        return result  # no d = d + e: nothing below would happen
    for index in candidates:
        statement = result[index]
        target = assigned[index]
        if statement is None:
            continue
        value = statement.value
        if not (
            isinstance(value, gast.BinOp)
            and isinstance(value.op, gast.Add)
            and isinstance(value.left, gast.Name)
            and value.left.id == target
            and type(value.left.ctx) is gast.Load
            and cache.of(statement).loads.count(target) == 1  # not read on the right
        ):
            continue
        # the nearest statement before that reads or writes the target
        earlier_index = index - 1
        while earlier_index >= 0 and (
            result[earlier_index] is None
            or (
                target not in facts_at[earlier_index].reads
                and target not in facts_at[earlier_index].writes
            )
        ):
            earlier_index -= 1
        if earlier_index < 0 or assigned[earlier_index] != target:
            continue
        earlier = result[earlier_index]
        if sum_length(earlier.value) >= MAX_MERGED_TERMS:  # keep expressions shallow
            continue
        between = [facts_at[p] for p in range(earlier_index + 1, index) if result[p] is not None]
        inputs = value_reads(earlier, cache.of(earlier))
        if all(
            target not in f.reads and f.modified.isdisjoint(inputs) for f in between
        ) and not any(is_compound(f.statement) for f in between):
            value.left = earlier.value
            told = facts_after_merging(facts_at[index], facts_at[earlier_index], value)
            if told is None or not cache.enabled:
                cache.forget(statement)
                facts_at[index] = cache.of(statement)
            else:
                cache.keep(told)
                facts_at[index] = told
            result[earlier_index] = None
            optimizer.changed = True
    kept = [s is not None for s in result]
    result = list(compress(result, kept))
    cache.remember(result, list(compress(facts_at, kept)))  # each kept current above
    return result


def merge_item_updates(optimizer, body):
    """``d[i] = a … d[i] += b`` → ``d[i] = a + b`` when nothing in between touches d."""
    cache = optimizer.facts
    result = list(body)
    if gast.AugAssign not in map(type, result):  # nothing below would happen
        return result
    for index, statement in enumerate(result):
        if not (isinstance(statement, gast.AugAssign) and isinstance(statement.op, gast.Add)):
            continue
        target = statement.target
        if not (isinstance(target, gast.Subscript) and isinstance(target.value, gast.Name)):
            continue
        name, place = target.value.id, gast.dump(target.slice)
        for earlier_index in range(index - 1, -1, -1):
            earlier = result[earlier_index]
            if earlier is None or is_comment(earlier):
                continue
            earlier_target = item_target(earlier)
            if earlier_target is not None and earlier_target[0] == name:
                if earlier_target[1] != place:
                    break
                value = earlier.value
                between = [s for s in result[earlier_index + 1 : index] if s is not None]
                earlier_reads = cache.of(earlier).reads
                if any(
                    is_compound(s) or cache.of(s).modified & earlier_reads for s in between
                ) or name in names_read(statement.value):
                    break
                combined = gast.BinOp(left=value, op=gast.Add(), right=statement.value)
                if isinstance(earlier, gast.Assign):
                    merged = gast.Assign(targets=[target], value=combined, type_comment=None)
                else:
                    merged = gast.AugAssign(target=target, op=gast.Add(), value=combined)
                result[index] = gast.copy_location(merged, statement)
                result[earlier_index] = None
                optimizer.changed = True
                break
            earlier_facts = cache.of(earlier)
            if name in earlier_facts.reads or name in earlier_facts.modified:
                break
    return [s for s in result if s is not None]
