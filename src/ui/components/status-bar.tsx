import { Text } from "ink";
import { memo } from "react";
import { fit } from "../format.js";
import { NOTICE_MS, type UiState } from "../state.js";
import { toneColor, useTheme } from "../theme.js";

const HINTS = "? help  ↑↓ select  enter details  / filter  l logs  m metrics  p perf  P shapes  r reload  q quit";

/** The bottom line: the filter or shapes being typed, a fresh notice, or the keys. */
export const StatusBar = memo(function StatusBar({ ui, now, width }: { ui: UiState; now: number; width: number }) {
  const theme = useTheme();
  if (ui.filtering) {
    const text = ui.filtering === "models" ? ui.modelFilter : ui.logFilter;
    return (
      <Text wrap="truncate">
        <Text bold>{`/ filter ${ui.filtering}: `}</Text>
        {text}
        <Text inverse> </Text>
        <Text color={toneColor(theme, "dim")}>{"  enter keeps it, esc clears it"}</Text>
      </Text>
    );
  }
  if (ui.prompt) {
    return (
      <Text wrap="truncate">
        <Text bold>{`shapes for ${ui.prompt.model}: `}</Text>
        {ui.prompt.text}
        <Text inverse> </Text>
        {ui.prompt.error ? (
          <Text color={toneColor(theme, "bad")}>{`  ${ui.prompt.error}`}</Text>
        ) : (
          <Text color={toneColor(theme, "dim")}>{"  NAME=2x3 OTHER=4; enter runs the check, esc cancels"}</Text>
        )}
      </Text>
    );
  }
  if (ui.notice && now - ui.notice.at < NOTICE_MS) {
    return (
      <Text wrap="truncate" color={toneColor(theme, ui.notice.level === "error" ? "bad" : "accent")}>
        {fit(ui.notice.text, width)}
      </Text>
    );
  }
  return (
    <Text wrap="truncate" color={toneColor(theme, "dim")}>
      {fit(HINTS, width)}
    </Text>
  );
});
