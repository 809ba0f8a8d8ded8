/**
 * Lint rules, area `scheduling`: how requests are scheduled: dynamic batching (preferred sizes,
 * priorities, queue policies), sequence batching (controls, slots) and the response cache.
 */
import {
  DataType,
  ModelSequenceBatching_Control_KindSchema,
  ModelQueuePolicy_TimeoutAction,
  ModelSequenceBatching_Control_Kind,
  type ModelQueuePolicy,
} from "../gen/model_config_pb.js";
import { type ModelContext, type Reporter, enumName, dataTypeName } from "./reporter.js";
import { seenAsModel, codes, type ModelRule, type RuleArea } from "./rule.js";

export const SCHEDULING_CODES = codes({
  "dynamic-batching-no-batch": {
    severity: "warning",
    description: "dynamic_batching on a model with max_batch_size 0, which cannot form batches",
  },
  "preferred-batch-size-positive": { severity: "error", description: "a preferred batch size of 0 or less" },
  "preferred-batch-size-too-large": { severity: "error", description: "a preferred batch size above max_batch_size" },
  "default-priority-out-of-range": {
    severity: "error",
    description: "default_priority_level outside 1..priority_levels",
  },
  "priority-policy-out-of-range": {
    severity: "error",
    description: "a priority_queue_policy for a level outside 1..priority_levels",
  },
  "priority-ignored": {
    severity: "warning",
    description: "a default_priority_level without priority_levels, which Triton ignores",
  },
  "preserve-ordering-priorities": { severity: "error", description: "preserve_ordering with priority levels" },
  "preserve-ordering-delay": { severity: "error", description: "preserve_ordering with a DELAY timeout action" },
  "response-cache-decoupled": { severity: "error", description: "the response cache on a decoupled model" },
  "response-cache-sequence": { severity: "error", description: "the response cache on a model with sequence batching" },
  "sequence-control-name": { severity: "error", description: "a sequence control input without a name" },
  "sequence-control-duplicate": { severity: "error", description: "two sequence control inputs of one name" },
  "sequence-control-kind-twice": { severity: "error", description: "one control kind given twice" },
  "sequence-control-values": {
    severity: "error",
    description: "a correlation id control given false/true values instead of a data_type",
  },
  "sequence-corrid-type": {
    severity: "error",
    description: "a correlation id control of a data type Triton does not take",
  },
  "sequence-slot-utilization": { severity: "error", description: "minimum_slot_utilization outside 0..1" },
});

declare module "./codes.js" {
  interface CodeTables {
    scheduling: typeof SCHEDULING_CODES;
  }
}

function isDelay(p: ModelQueuePolicy | undefined): boolean {
  return !!p && p.timeoutAction === ModelQueuePolicy_TimeoutAction.DELAY && p.defaultTimeoutMicroseconds !== 0n;
}

/**
 * Preferred batch sizes against max_batch_size. A negative max_batch_size is already an error of
 * its own, and no size can be compared with it, so only the sign of each size is checked then.
 */
function checkPreferredSizes(sizes: readonly number[], mbs: number, pathOf: (i: number) => string, r: Reporter): void {
  sizes.forEach((size, i) => {
    const where = pathOf(i);
    if (size <= 0) {
      r.error(
        "preferred-batch-size-positive",
        where,
        `preferred batch size ${size} must be positive`,
        mbs > 0 ? `Use sizes from 1 to ${mbs}.` : "Use sizes from 1 to max_batch_size.",
      );
    } else if (mbs >= 0 && size > mbs) {
      r.error(
        "preferred-batch-size-too-large",
        where,
        `preferred batch size ${size} is larger than max_batch_size ${mbs}`,
        mbs === 0
          ? "The model does not batch (max_batch_size 0): raise max_batch_size or drop preferred_batch_size."
          : `Use sizes up to ${mbs}, or raise max_batch_size.`,
      );
    }
  });
}

function checkDynamicBatching(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (c.schedulingChoice.case !== "dynamicBatching") return;
  const db = c.schedulingChoice.value;
  const mbs = c.maxBatchSize;
  checkPreferredSizes(db.preferredBatchSize, mbs, (i) => `dynamic_batching.preferred_batch_size[${i}]#value`, r);

  const levels = db.priorityLevels;
  if (levels !== 0n) {
    if (db.defaultPriorityLevel === 0n || db.defaultPriorityLevel > levels) {
      r.error(
        "default-priority-out-of-range",
        db.defaultPriorityLevel === 0n
          ? "dynamic_batching.priority_levels"
          : "dynamic_batching.default_priority_level#value",
        db.defaultPriorityLevel === 0n
          ? `priority_levels is ${levels} but default_priority_level is not set`
          : `default_priority_level ${db.defaultPriorityLevel} is outside 1..${levels}`,
        `Set default_priority_level to a level from 1 to ${levels} (1 is the highest priority).`,
      );
    }
    for (const key of Object.keys(db.priorityQueuePolicy)) {
      const k = BigInt(key);
      if (k === 0n || k > levels) {
        r.error(
          "priority-policy-out-of-range",
          `dynamic_batching.priority_queue_policy{${key}}.key#value`,
          `priority_queue_policy for level ${key} is outside 1..${levels}`,
          `Use a level from 1 to ${levels}, or raise priority_levels.`,
        );
      }
    }
  } else {
    if (db.defaultPriorityLevel !== 0n) {
      r.warning(
        "priority-ignored",
        "dynamic_batching.default_priority_level",
        "default_priority_level has no effect without priority_levels",
        "Set priority_levels, or delete default_priority_level.",
      );
    }
    if (Object.keys(db.priorityQueuePolicy).length > 0) {
      r.warning(
        "priority-ignored",
        "dynamic_batching.priority_queue_policy",
        "priority_queue_policy has no effect without priority_levels",
        "Set priority_levels, or delete priority_queue_policy.",
      );
    }
  }

  if (db.preserveOrdering) {
    if (levels > 1n) {
      r.error(
        "preserve-ordering-priorities",
        "dynamic_batching.preserve_ordering",
        `preserve_ordering allows one priority level, but priority_levels is ${levels}`,
        "Drop preserve_ordering, or use a single priority level.",
      );
    }
    if (isDelay(db.defaultQueuePolicy)) {
      r.error(
        "preserve-ordering-delay",
        "dynamic_batching.default_queue_policy.timeout_action#value",
        "preserve_ordering cannot be combined with timeout_action DELAY",
        "Use timeout_action: REJECT, or drop preserve_ordering.",
      );
    }
    for (const [key, p] of Object.entries(db.priorityQueuePolicy)) {
      if (isDelay(p)) {
        r.error(
          "preserve-ordering-delay",
          `dynamic_batching.priority_queue_policy{${key}}.timeout_action#value`,
          "preserve_ordering cannot be combined with timeout_action DELAY",
          "Use timeout_action: REJECT, or drop preserve_ordering.",
        );
      }
    }
  }
  if (mbs === 0 && db.preferredBatchSize.length === 0 && levels === 0n && !db.defaultQueuePolicy) {
    r.warning(
      "dynamic-batching-no-batch",
      "dynamic_batching",
      "dynamic_batching cannot form batches when max_batch_size is 0",
      "Set max_batch_size to the largest batch the model accepts.",
    );
  }
}

function checkSequenceBatching(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (c.schedulingChoice.case !== "sequenceBatching") return;
  const sb = c.schedulingChoice.value;
  if (c.responseCache?.enable) {
    r.error(
      "response-cache-sequence",
      "response_cache",
      "the response cache does not support sequence batching",
      "Remove response_cache, or use dynamic_batching.",
    );
  }
  const K = ModelSequenceBatching_Control_Kind;
  const names = new Set<string>();
  const seenKinds = new Set<number>();
  sb.controlInput.forEach((ci, i) => {
    const p = `sequence_batching.control_input[${i}]`;
    if (!ci.name)
      r.error(
        "sequence-control-name",
        p,
        "a sequence control input has no name",
        'Add name: "...": the model input that receives the control.',
      );
    else if (names.has(ci.name))
      r.error(
        "sequence-control-duplicate",
        `${p}.name#value`,
        `control tensor '${ci.name}' is used for more than one control`,
        "Give each control its own input.",
      );
    names.add(ci.name);
    ci.control.forEach((ctl, j) => {
      const cp = `${p}.control[${j}]`;
      const kindLabel = enumName(ModelSequenceBatching_Control_KindSchema, ctl.kind);
      if (seenKinds.has(ctl.kind))
        r.error(
          "sequence-control-kind-twice",
          cp,
          `${kindLabel} is given more than once`,
          "Keep one control of each kind.",
        );
      seenKinds.add(ctl.kind);
      const lists = [ctl.int32FalseTrue.length, ctl.fp32FalseTrue.length, ctl.boolFalseTrue.length];
      const nonEmpty = lists.filter((n) => n > 0);
      if (ctl.kind === K.CONTROL_SEQUENCE_CORRID) {
        if (nonEmpty.length > 0)
          r.error(
            "sequence-control-values",
            cp,
            `${kindLabel} takes a data_type, not false/true values`,
            "Delete int32_false_true / fp32_false_true / bool_false_true here.",
          );
        const ok = [
          DataType.TYPE_UINT64,
          DataType.TYPE_INT64,
          DataType.TYPE_UINT32,
          DataType.TYPE_INT32,
          DataType.TYPE_STRING,
        ];
        if (!ok.includes(ctl.dataType))
          r.error(
            "sequence-corrid-type",
            cp,
            `${kindLabel} has data_type ${dataTypeName(ctl.dataType)}`,
            "Use TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING.",
          );
      } else if (nonEmpty.length === 0) {
        r.error(
          "sequence-control-values",
          cp,
          `${kindLabel} needs int32_false_true, fp32_false_true or bool_false_true`,
          "Add e.g. int32_false_true: [ 0, 1 ].",
        );
      } else if (nonEmpty.length > 1) {
        r.error(
          "sequence-control-values",
          cp,
          `${kindLabel} gives more than one of int32_false_true, fp32_false_true and bool_false_true`,
          "Keep one of them.",
        );
      } else if (nonEmpty[0] !== 2) {
        r.error(
          "sequence-control-values",
          cp,
          `${kindLabel} false/true values need exactly 2 entries, has ${nonEmpty[0]}`,
          "Write the false value then the true value, e.g. [ 0, 1 ].",
        );
      }
    });
  });
  if (sb.strategyChoice.case === "oldest") {
    checkPreferredSizes(
      sb.strategyChoice.value.preferredBatchSize,
      c.maxBatchSize,
      (i) => `sequence_batching.oldest.preferred_batch_size[${i}]#value`,
      r,
    );
  }
  if (sb.strategyChoice.case === "direct") {
    const u = sb.strategyChoice.value.minimumSlotUtilization;
    if (u < 0 || u > 1)
      r.error(
        "sequence-slot-utilization",
        "sequence_batching.direct.minimum_slot_utilization#value",
        `minimum_slot_utilization ${u} is outside 0..1`,
        "Use a fraction between 0 and 1.",
      );
  }
}

export const DYNAMIC_BATCHING_RULE: ModelRule = {
  name: "dynamic batching",
  applies: seenAsModel,
  check: checkDynamicBatching,
};
export const SEQUENCE_BATCHING_RULE: ModelRule = {
  name: "sequence batching",
  applies: seenAsModel,
  check: checkSequenceBatching,
};
export const RESPONSE_CACHE_RULE: ModelRule = {
  name: "response cache",
  applies: seenAsModel,
  check: checkResponseCache,
};

export const SCHEDULING: RuleArea<typeof SCHEDULING_CODES> = {
  area: "scheduling",
  codes: SCHEDULING_CODES,
  rules: [DYNAMIC_BATCHING_RULE, SEQUENCE_BATCHING_RULE, RESPONSE_CACHE_RULE],
};

function checkResponseCache(ctx: ModelContext, r: Reporter): void {
  const c = ctx.parsed.config;
  if (c.modelTransactionPolicy?.decoupled && c.responseCache?.enable) {
    r.error(
      "response-cache-decoupled",
      "response_cache",
      "the response cache does not support decoupled models",
      "Remove response_cache or set decoupled: false.",
    );
  }
}
