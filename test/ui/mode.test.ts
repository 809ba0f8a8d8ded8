import { describe, expect, it } from "vitest";
import { isCi, shouldOpenDashboard } from "../../src/ui/mode.js";
import { colorEnabled } from "../../src/ui/theme.js";

const tty = { isTTY: true };
const pipe = { isTTY: false };
const flags = { ui: true, json: false, detach: false };

describe("when the dashboard opens", () => {
  it("opens only with a terminal on stdout and stdin, outside CI, without --no-ui/--json/--detach", () => {
    expect(shouldOpenDashboard(flags, {}, tty, tty)).toBe(true);
    expect(shouldOpenDashboard(flags, {}, pipe, tty)).toBe(false);
    expect(shouldOpenDashboard(flags, {}, tty, pipe)).toBe(false);
    expect(shouldOpenDashboard({ ...flags, ui: false }, {}, tty, tty)).toBe(false);
    expect(shouldOpenDashboard({ ...flags, json: true }, {}, tty, tty)).toBe(false);
    expect(shouldOpenDashboard({ ...flags, detach: true }, {}, tty, tty)).toBe(false);
    expect(shouldOpenDashboard(flags, { CI: "true" }, tty, tty)).toBe(false);
    expect(shouldOpenDashboard(flags, { TERM: "dumb" }, tty, tty)).toBe(false);
  });

  it("reads CI as CI systems set it", () => {
    expect(isCi({ CI: "1" })).toBe(true);
    expect(isCi({ CONTINUOUS_INTEGRATION: "yes" })).toBe(true);
    expect(isCi({ CI: "false" })).toBe(false);
    expect(isCi({ CI: "0" })).toBe(false);
    expect(isCi({ CI: "" })).toBe(false);
    expect(isCi({})).toBe(false);
  });

  it("respects NO_COLOR", () => {
    expect(colorEnabled({})).toBe(true);
    expect(colorEnabled({ NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled({ NO_COLOR: "" })).toBe(true);
    expect(colorEnabled({ TERM: "dumb" })).toBe(false);
  });
});
