// A session client written directly against the wire protocol (src/dataplane/protocol.ts), for tests
// that must send what the real client never sends: forged or foreign tokens, stale messages.
import type { AuthorityMessage, ClientMessage, GrantWire } from '../../../src/dataplane/protocol.js';
import type { DataPlane, SessionAccess } from '../../../src/index.js';
import { onCleanup } from './plane.js';

export interface RawClient {
  send(m: ClientMessage): void;
  /** Next reply carrying this id (grant, ok, error, cancelled). */
  reply(id: number): Promise<AuthorityMessage>;
  grant(id: number): Promise<GrantWire>;
  /** Every message received so far (and not yet taken by reply) that carries this id. */
  queued(id: number): AuthorityMessage[];
}

export async function rawClient(dp: DataPlane, access: SessionAccess): Promise<RawClient> {
  const port = dp.createSessionPort(access);
  const inbox: AuthorityMessage[] = [];
  const waiting: Array<() => void> = [];
  port.onmessage = (e: MessageEvent) => {
    inbox.push(e.data as AuthorityMessage);
    for (const w of waiting.splice(0)) w();
  };
  const next = async (match: (m: AuthorityMessage) => boolean): Promise<AuthorityMessage> => {
    for (;;) {
      const i = inbox.findIndex(match);
      if (i >= 0) return inbox.splice(i, 1)[0]!;
      await new Promise<void>((r) => waiting.push(r));
    }
  };
  const welcome = (await next((m) => m.t === 'welcome')) as Extract<AuthorityMessage, { t: 'welcome' }>;
  let release: () => void = () => undefined;
  await new Promise<void>((held) => {
    void navigator.locks.request(welcome.sessionLock, () => new Promise<void>((r) => ((release = r), held())));
  });
  onCleanup(() => {
    release();
    port.close();
  });
  port.postMessage({ t: 'hello' } satisfies ClientMessage);
  await next((m) => m.t === 'running');
  const reply = (id: number) => next((m) => 'id' in m && m.id === id);
  return {
    send: (m) => port.postMessage(m),
    reply,
    queued: (id) => inbox.filter((m) => 'id' in m && m.id === id),
    async grant(id) {
      const m = await reply(id);
      if (m.t !== 'grant') throw new Error(`expected a grant, got ${JSON.stringify(m)}`);
      return m.grant;
    },
  };
}
