import { useStdout } from "ink";
import { useEffect, useState } from "react";

export interface TerminalSize {
  columns: number;
  rows: number;
}

/** The terminal's size, following resizes; a stream that is not a terminal reads as 100×40. */
export function useTerminalSize(fallback: TerminalSize = { columns: 100, rows: 40 }): TerminalSize {
  const { stdout } = useStdout();
  const read = (): TerminalSize => ({
    columns: stdout.columns || fallback.columns,
    rows: stdout.rows || fallback.rows,
  });
  const [size, setSize] = useState(read);
  useEffect(() => {
    const onResize = () => setSize(read());
    stdout.on("resize", onResize);
    return () => {
      stdout.off("resize", onResize);
    };
  }, [stdout]);
  return size;
}
