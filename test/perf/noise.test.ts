import { describe, expect, it } from "vitest";
import { BETWEEN_SWEEPS, compareNoisy, figureNoise, MIN_STEP, plusMinus, spread } from "../../src/perf/noise.js";

describe("noise", () => {
  it("is the windows' spread, (max - min) / mean, shown as ±", () => {
    expect(spread([90, 100, 110])).toBeCloseTo(0.2);
    expect(spread([100])).toBe(0);
    expect(figureNoise([90, 110])).toEqual({ min: 90, max: 110, spread: 0.2 });
    expect(figureNoise([])).toBeUndefined();
    expect(plusMinus(0.034)).toBe("±3.4%");
    expect(plusMinus(0.2)).toBe("±20%");
    expect(plusMinus(undefined)).toBe("-");
  });

  it("names a higher or lower figure only beyond the larger noise of the two, 2% at least", () => {
    expect(compareNoisy({ value: 100, noise: 0.05 }, { value: 104, noise: 0.01 }).verdict).toBe("within noise");
    expect(compareNoisy({ value: 100, noise: 0.05 }, { value: 106, noise: 0.01 }).verdict).toBe("higher");
    expect(compareNoisy({ value: 100, noise: 0.05 }, { value: 94, noise: 0.01 }).verdict).toBe("lower");
    expect(compareNoisy({ value: 100 }, { value: 101.5 })).toMatchObject({ verdict: "within noise", band: MIN_STEP });
  });

  it("between two sweeps, names nothing within 5% however quiet each sweep's windows were", () => {
    // Two sweeps of one config on a busy machine: 2.05% apart, windows spread 0.1% and 1.9%.
    const a = { value: 99.57, noise: 0.001 };
    const b = { value: 97.54, noise: 0.019 };
    expect(compareNoisy(a, b).verdict).toBe("lower");
    expect(compareNoisy(a, b, BETWEEN_SWEEPS)).toMatchObject({ verdict: "within noise", band: BETWEEN_SWEEPS });
    expect(compareNoisy(a, { value: 94, noise: 0.019 }, BETWEEN_SWEEPS).verdict).toBe("lower");
  });

  it("calls windows whose ranges overlap within noise, whatever the ratio", () => {
    // 10% apart with 5% spreads, but a window of each measured 104.
    const a = { value: 100, noise: 0.05, range: { min: 98, max: 104 } };
    const b = { value: 110, noise: 0.05, range: { min: 104, max: 112 } };
    expect(compareNoisy(a, b).verdict).toBe("within noise");
    expect(compareNoisy(a, { ...b, range: { min: 105, max: 112 } }).verdict).toBe("higher");
    expect(compareNoisy(b, a).verdict).toBe("within noise");
  });
});
