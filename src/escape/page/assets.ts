/** placeholder */
export const PAGE_FILES: Readonly<Record<string, { type: string; body: string }>> = {};
