// How a hub fetch fails: a code per cause (the CLI's message and exit, a test's assertion) and a
// message that says what to do.
/** `layout`: the repo's files say something the engine cannot load (an unknown decision.json layout, invalid JSON). */
export type HubFetchErrorCode =
  'not_found' | 'unauthorized' | 'missing_file' | 'layout' | 'checksum' | 'http' | 'network';

export class HubFetchError extends Error {
  constructor(
    readonly code: HubFetchErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'HubFetchError';
  }
}
