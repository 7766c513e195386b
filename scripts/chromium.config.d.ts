export function chromiumPath(): string;
export const chromiumArgs: string[];
export const crossOriginIsolationHeaders: Record<string, string>;
export const hardwareChromiumArgs: string[];
