import { createContext, useContext } from "react";

/** Colour is decoration only: with NO_COLOR every panel must still read (bold, inverse, symbols). */
export interface Theme {
  color: boolean;
}

export const ThemeContext = createContext<Theme>({ color: true });

export function useTheme(): Theme {
  return useContext(ThemeContext);
}

/** https://no-color.org: any non-empty NO_COLOR turns colour off; TERM=dumb cannot show it. */
export function colorEnabled(env: NodeJS.ProcessEnv): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.TERM === "dumb") return false;
  return true;
}

export type Tone = "ok" | "warn" | "bad" | "dim" | "accent" | undefined;

const TONES: Record<Exclude<Tone, undefined>, string> = {
  ok: "green",
  warn: "yellow",
  bad: "red",
  dim: "gray",
  accent: "cyan",
};

/** The Ink colour for a tone, or none when colour is off. */
export function toneColor(theme: Theme, tone: Tone): string | undefined {
  return theme.color && tone ? TONES[tone] : undefined;
}

export function stateTone(state: string): Tone {
  switch (state) {
    case "READY":
      return "ok";
    case "LOADING":
    case "UNLOADING":
    case "STAGED":
      return "warn";
    case "UNAVAILABLE":
    case "NOT LOADED":
      return "bad";
    default:
      return "dim";
  }
}
