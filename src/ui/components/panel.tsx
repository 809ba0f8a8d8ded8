import { Box, Text } from "ink";
import type { ReactNode } from "react";
import { fit } from "../format.js";
import { toneColor, useTheme } from "../theme.js";

export interface PanelProps {
  title: string;
  /** Right-aligned in the top border (a count, a mode). */
  extra?: string;
  width: number;
  /** Outer height, borders included. */
  height: number;
  focused?: boolean;
  children?: ReactNode;
}

/** A rounded box with its title set into the top border; content is clipped to the box. */
export function Panel({ title, extra, width, height, focused, children }: PanelProps) {
  const theme = useTheme();
  const inner = Math.max(0, width - 2);
  const head = `─ ${title} `;
  const tail = extra ? ` ${extra} ─` : "";
  const fill = Math.max(0, inner - head.length - tail.length);
  const top = fit(head + "─".repeat(fill) + tail, inner);
  const border = toneColor(theme, focused ? "accent" : undefined);
  return (
    <Box flexDirection="column" width={width} height={height} flexShrink={0}>
      <Text wrap="truncate" color={border}>
        {"╭"}
        <Text bold>{top.slice(0, head.length)}</Text>
        {top.slice(head.length)}
        {"╮"}
      </Text>
      <Box
        borderStyle="round"
        borderTop={false}
        borderColor={border}
        flexDirection="column"
        width={width}
        height={Math.max(1, height - 1)}
        overflow="hidden"
      >
        {children}
      </Box>
    </Box>
  );
}

/** One line of a panel, cut to its width. */
export function Line({
  children,
  ...rest
}: {
  children?: ReactNode;
  color?: string;
  bold?: boolean;
  inverse?: boolean;
  dimColor?: boolean;
}) {
  return (
    <Text wrap="truncate" {...rest}>
      {children}
    </Text>
  );
}
