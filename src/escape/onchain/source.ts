/** Where an on-chain proof comes from, when it comes from a member's store (optional for callers). */
export interface EscapeSource {
  readonly profile: string;
  readonly batch_id: number;
  readonly sequence_number: number;
}

/** The source fields in the order the JSON shows them; nothing when there is no source. */
export function sourceFields(source: EscapeSource | undefined): Partial<EscapeSource> {
  if (!source) return {};
  return { profile: source.profile, batch_id: source.batch_id, sequence_number: source.sequence_number };
}
