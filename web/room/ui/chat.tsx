import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { Chat, CHAT_LIMITS, CHAT_MODES, type ChatMessageView, type ChatMode } from '../../../src/core/chat.ts';
import { RoomAccess, type RoomRole } from '../../../src/core/room-access.ts';
import type { RoomController } from '../controller.ts';
import type { State } from '../reducer.ts';
import { Panel } from './panel.tsx';

/**
 * The chat panel: the room's messages and this person's private conversation with the hosts (hosts: every
 * student's), a composer offering only what the settings allow (src/core/chat.ts), hosts' delete and the
 * chat settings. Messages are text: addresses become links, nothing is ever markup.
 */

type ChatActions = Pick<RoomController, 'sendChat' | 'deleteChat' | 'chatSettings' | 'readChat'>;

const MODE_LABEL: Record<ChatMode, string> = { everyone: 'Everyone', 'hosts-only': 'Hosts only', off: 'Off' };
const ROLE_TAG: Partial<Record<RoomRole, string>> = { HOST: 'Teacher', COHOST: 'Host' };

/** http(s) addresses in a message, to show as links (everything else stays text). */
const LINK = /\bhttps?:\/\/[^\s<>"']+[^\s<>"'.,;:!?)\]]/g;

export function Linked({ text }: { text: string }) {
  const parts: (string | { href: string })[] = [];
  let at = 0;
  for (const m of text.matchAll(LINK)) {
    if (m.index! > at) parts.push(text.slice(at, m.index));
    parts.push({ href: m[0] });
    at = m.index! + m[0].length;
  }
  if (at < text.length) parts.push(text.slice(at));
  return (
    <>
      {parts.map((p, i) =>
        typeof p === 'string' ? (
          p
        ) : (
          <a key={i} href={p.href} target="_blank" rel="noopener noreferrer nofollow">
            {p.href}
          </a>
        ),
      )}
    </>
  );
}

const time = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });

export function ChatPanel({ room: s, host, act, onClose }: { room: Pick<State, 'chat' | 'chatUnread' | 'settings' | 'roster' | 'participantId' | 'session'>; host: boolean; act: ChatActions; onClose: () => void }) {
  const role = s.session?.role ?? 'PARTICIPANT';
  const offers = Chat.offers(role, s.settings);
  const students = s.roster.filter((p) => !RoomAccess.isHost(p.roomRole) && p.participantId !== s.participantId);
  const [to, setTo] = useState<string>(offers.room ? 'everyone' : 'hosts');
  const [text, setText] = useState('');
  const [status, setStatus] = useState('');
  const input = useRef<HTMLTextAreaElement>(null);
  const list = useRef<HTMLOListElement>(null);
  // what the person can send to now (the settings change live): the room, the hosts, or (hosts) a student
  const targets = [
    ...(offers.room ? [{ value: 'everyone', label: 'Everyone' }] : []),
    ...(offers.hosts ? [{ value: 'hosts', label: 'The hosts (privately)' }] : []),
    ...(host ? students.map((p) => ({ value: p.participantId, label: `${p.name} (privately)` })) : []),
  ];
  const target = targets.some((x) => x.value === to) ? to : targets[0]?.value;
  useEffect(() => act.readChat(), [s.chat.length]);
  useLayoutEffect(() => {
    const el = list.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [s.chat.length]);
  const send = async (e: Event) => {
    e.preventDefault();
    if (!text.trim() || !target) return;
    const ok = await act.sendChat(text, target === 'everyone' ? undefined : target);
    if (ok) {
      setText('');
      setStatus(target === 'everyone' ? 'Sent to everyone.' : target === 'hosts' ? 'Sent to the hosts, privately.' : `Sent to ${targets.find((x) => x.value === target)?.label.replace(' (privately)', '') ?? 'them'}, privately.`);
    }
    input.current?.focus();
  };
  return (
    <Panel label="Chat" title="Chat" control="Chat" onClose={onClose}>
      {host && <ChatSettings settings={s.settings} act={act} />}
      {s.chat.length === 0 ? (
        <p class="muted small empty">No messages yet.</p>
      ) : (
        <ol class="chat" ref={list} aria-label="Messages">
          {s.chat.map((m) => (
            <Message key={m.messageId} m={m} mine={m.participantId === s.participantId} host={host} act={act} />
          ))}
        </ol>
      )}
      {target && !host && !offers.room && (
        <p class="muted small" id="chat-private-only">
          {s.settings.chat === 'off' ? 'The chat is off; you can write to the hosts privately.' : 'Only hosts write to everyone in this meeting; you can write to the hosts privately.'}
        </p>
      )}
      {target ? (
        <form class="composer" onSubmit={send}>
          {targets.length > 1 && (
            <label class="field small">
              To
              <select value={target} onChange={(e) => setTo((e.target as HTMLSelectElement).value)}>
                {targets.map((x) => (
                  <option value={x.value}>{x.label}</option>
                ))}
              </select>
            </label>
          )}
          <textarea
            ref={input}
            id="chat-input"
            aria-label={target === 'everyone' ? 'Message to everyone' : 'Private message'}
            rows={2}
            maxLength={CHAT_LIMITS.textChars}
            value={text}
            placeholder={target === 'everyone' ? 'Message everyone' : 'Private message'}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey) void send(e);
            }}
          />
          <button class="btn primary small" type="submit" disabled={!text.trim()}>
            Send
          </button>
          <p class="small muted" role="status" id="chat-status">
            {status}
          </p>
        </form>
      ) : (
        <p class="muted small" id="chat-closed">
          {s.settings.chat === 'off' ? 'The chat is off in this meeting.' : 'Only hosts write in this chat; you can read it.'}
        </p>
      )}
    </Panel>
  );
}

function Message({ m, mine, host, act }: { m: ChatMessageView; mine: boolean; host: boolean; act: ChatActions }) {
  const tag = ROLE_TAG[m.roomRole];
  return (
    <li class={`msg${m.privateWith ? ' private' : ''}${mine ? ' mine' : ''}`}>
      <p class="msg-head">
        <b>{mine ? 'You' : m.name}</b>
        {tag && <span class="tag">{tag}</span>}
        <span class="muted small">{time(m.sentAt)}</span>
        {m.privateWith && <span class="small private-tag">{host ? `Private with ${m.privateWith.name}` : 'Private, with the hosts'}</span>}
        {host && (
          <button class="icon-btn small" aria-label={`Delete the message from ${m.name}`} title="Delete" onClick={() => void act.deleteChat(m.messageId)}>
            ×
          </button>
        )}
      </p>
      <p class="msg-text">
        <Linked text={m.text} />
      </p>
    </li>
  );
}

function ChatSettings({ settings, act }: { settings: State['settings']; act: ChatActions }) {
  return (
    <details class="chat-settings">
      <summary>Chat settings</summary>
      <label class="field small">
        Who can write to everyone
        <select value={settings.chat} onChange={(e) => void act.chatSettings({ chat: (e.target as HTMLSelectElement).value as ChatMode })}>
          {CHAT_MODES.map((m) => (
            <option value={m}>{MODE_LABEL[m]}</option>
          ))}
        </select>
      </label>
      <label class="check small">
        <input type="checkbox" checked={settings.privateChatToHosts} onChange={(e) => void act.chatSettings({ privateChatToHosts: (e.target as HTMLInputElement).checked })} />
        Students can message the hosts privately
      </label>
    </details>
  );
}
