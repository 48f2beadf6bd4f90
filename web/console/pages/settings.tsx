import { useState } from 'preact/hooks';
import * as api from '../api.ts';
import { update, current } from '../session.ts';
import { ErrorNote, Loaded, PageHead, useAction, useFlash, useLoad } from '../ui/common.tsx';
import { AdminsPanel } from './admins.tsx';

export interface Org {
  id: string;
  name: string;
  plan: string;
  features: string[];
  allowedOrigins: string[];
  attendanceRules: { lateAfterMinutes: number; presentShare: number; mergeGapSeconds: number; settleMinutes: number };
  mobileApps: { android: { packageName: string; sha256CertFingerprints: string[] } | null; ios: { teamId: string; bundleId: string } | null };
  recordingRetentionDays: number;
  /** Issue 27's AI notes; absent on a server without them. */
  aiNotes?: boolean;
  language?: string;
  aiNotesUnavailable?: string | null;
  /** What admins may type at sign-in instead of the id. */
  shortName?: string | null;
}

/** The organization's settings (PATCH /orgs/:orgId): name, allowed origins, the apps for deep links, attendance rules, recording retention, AI notes. */
export function Settings() {
  const [load, reload, set] = useLoad(() => api.get<Org>(api.org()), 'org');
  return (
    <>
      <PageHead title="Settings" sub="Your organization's settings. Changes apply on every node at once." />
      <Loaded load={load} what="settings" retry={reload}>
        {(org) => <SettingsForm org={org} onSaved={set} />}
      </Loaded>
      <AdminsPanel />
    </>
  );
}

function SettingsForm({ org, onSaved }: { org: Org; onSaved: (o: Org) => void }) {
  const [name, setName] = useState(org.name);
  const [shortName, setShortName] = useState(org.shortName ?? '');
  const [origins, setOrigins] = useState(org.allowedOrigins.join('\n'));
  const [rules, setRules] = useState({ ...org.attendanceRules, presentShare: Math.round(org.attendanceRules.presentShare * 100) });
  const [retention, setRetention] = useState(String(org.recordingRetentionDays));
  const [aiNotes, setAiNotes] = useState(org.aiNotes ?? false);
  const [language, setLanguage] = useState(org.language ?? '');
  const [android, setAndroid] = useState({ packageName: org.mobileApps.android?.packageName ?? '', fingerprints: org.mobileApps.android?.sha256CertFingerprints.join('\n') ?? '' });
  const [ios, setIos] = useState({ teamId: org.mobileApps.ios?.teamId ?? '', bundleId: org.mobileApps.ios?.bundleId ?? '' });
  const action = useAction();
  const [flash, say] = useFlash();
  const num = (v: string) => (v.trim() === '' ? NaN : Number(v));

  const submit = (e: Event) => {
    e.preventDefault();
    void action.run(async () => {
      const body: Record<string, unknown> = {};
      if (name.trim() !== org.name) body.name = name.trim();
      if (org.shortName !== undefined && shortName.trim().toLowerCase() !== (org.shortName ?? '')) body.shortName = shortName.trim().toLowerCase() || null;
      const list = origins
        .split(/[\s,]+/)
        .map((o) => o.trim())
        .filter(Boolean);
      if (list.join('\n') !== org.allowedOrigins.join('\n')) body.allowedOrigins = list;
      const r = { ...rules, presentShare: rules.presentShare / 100 };
      const changedRules = Object.fromEntries(Object.entries(r).filter(([k, v]) => v !== org.attendanceRules[k as keyof Org['attendanceRules']]));
      if (Object.keys(changedRules).length) body.attendanceRules = changedRules;
      if (num(retention) !== org.recordingRetentionDays) body.recordingRetentionDays = num(retention);
      if (org.aiNotes !== undefined && aiNotes !== org.aiNotes) body.aiNotes = aiNotes;
      if (org.language !== undefined && language.trim() !== org.language) body.language = language.trim();
      // a platform emptied is removed; one changed is replaced; the API says what is wrong with one
      const apps: Record<string, unknown> = {};
      const prints = android.fingerprints.split(/[\s,]+/).map((f) => f.trim()).filter(Boolean);
      const androidNow = android.packageName.trim() ? { packageName: android.packageName.trim(), sha256CertFingerprints: prints } : null;
      if (JSON.stringify(androidNow) !== JSON.stringify(org.mobileApps.android)) apps.android = androidNow;
      const iosNow = ios.teamId.trim() || ios.bundleId.trim() ? { teamId: ios.teamId.trim(), bundleId: ios.bundleId.trim() } : null;
      if (JSON.stringify(iosNow) !== JSON.stringify(org.mobileApps.ios)) apps.ios = iosNow;
      if (Object.keys(apps).length) body.mobileApps = apps;
      if (!Object.keys(body).length) {
        say('Nothing changed.');
        return;
      }
      const saved = await api.patch<Org>(api.org(), body);
      onSaved(saved);
      setOrigins(saved.allowedOrigins.join('\n'));
      const s = current();
      if (s) update(s.orgId, { orgName: saved.name });
      say('Settings saved.');
    });
  };

  const rule = (key: keyof typeof rules, label: string, hint: string, unit: string, max?: number) => (
    <label>
      <span>{label}</span>
      <span class="with-unit">
        <input name={key} type="number" min={0} max={max} step={1} required value={rules[key]} onInput={(e) => setRules({ ...rules, [key]: num((e.target as HTMLInputElement).value) })} aria-describedby={`${key}-hint`} />
        <span class="unit">{unit}</span>
      </span>
      <span class="hint" id={`${key}-hint`}>
        {hint}
      </span>
    </label>
  );

  return (
    <form class="form settings" onSubmit={submit}>
      <section class="panel" aria-labelledby="s-org">
        <h2 id="s-org">Organization</h2>
        <label>
          <span>Name</span>
          <input name="name" required maxLength={200} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </label>
        {org.shortName !== undefined && (
          <label>
            <span>Short name</span>
            <input name="shortName" maxLength={40} value={shortName} onInput={(e) => setShortName((e.target as HTMLInputElement).value)} aria-describedby="short-hint" spellcheck={false} autocomplete="off" />
            <span class="hint" id="short-hint">
              Admins may type it at sign-in instead of the organization id: 3 to 40 lowercase letters, digits and hyphens, starting with a letter. Leave it empty for none.
            </span>
          </label>
        )}
        <dl class="facts">
          <div>
            <dt>Organization id</dt>
            <dd>
              <code>{org.id}</code>
            </dd>
          </div>
          <div>
            <dt>Plan</dt>
            <dd>{org.plan}</dd>
          </div>
          <div>
            <dt>Plan features</dt>
            <dd>{org.features.length ? org.features.join(', ') : 'none'}</dd>
          </div>
        </dl>
      </section>
      <section class="panel" aria-labelledby="s-embed">
        <h2 id="s-embed">Embedding</h2>
        <label>
          <span>Allowed origins</span>
          <textarea name="allowedOrigins" rows={4} value={origins} onInput={(e) => setOrigins((e.target as HTMLTextAreaElement).value)} spellcheck={false} placeholder="https://lms.school.example" aria-describedby="origins-hint" />
          <span class="hint" id="origins-hint">
            One per line: the sites whose pages may put the room in an iframe with the embedding SDK (scheme, host and optional port). At most 50.
          </span>
        </label>
      </section>
      <section class="panel" aria-labelledby="s-apps">
        <h2 id="s-apps">Your apps</h2>
        <p class="hint" id="apps-hint">
          When your school has its own app, the join page offers "Open in the app" on a phone of that platform, and this server vouches for the app (Android App Links, iOS universal links). Leave a platform empty for none.
        </p>
        <div class="grid-2">
          <fieldset>
            <legend>Android</legend>
            <label>
              <span>Package name</span>
              <input name="androidPackageName" value={android.packageName} maxLength={150} placeholder="org.school.classroom" spellcheck={false} autocomplete="off" aria-describedby="apps-hint" onInput={(e) => setAndroid({ ...android, packageName: (e.target as HTMLInputElement).value })} />
            </label>
            <label>
              <span>Signing certificate fingerprints (SHA-256)</span>
              <textarea name="androidFingerprints" rows={2} value={android.fingerprints} spellcheck={false} aria-describedby="prints-hint" onInput={(e) => setAndroid({ ...android, fingerprints: (e.target as HTMLTextAreaElement).value })} />
              <span class="hint" id="prints-hint">
                One per line, as 32 pairs like AB:CD:…; with Play App Signing, the app signing key's.
              </span>
            </label>
          </fieldset>
          <fieldset>
            <legend>iOS</legend>
            <label>
              <span>Team id</span>
              <input name="iosTeamId" value={ios.teamId} maxLength={10} placeholder="ABCDE12345" spellcheck={false} autocomplete="off" onInput={(e) => setIos({ ...ios, teamId: (e.target as HTMLInputElement).value })} />
            </label>
            <label>
              <span>Bundle id</span>
              <input name="iosBundleId" value={ios.bundleId} maxLength={150} placeholder="org.school.classroom" spellcheck={false} autocomplete="off" onInput={(e) => setIos({ ...ios, bundleId: (e.target as HTMLInputElement).value })} />
            </label>
          </fieldset>
        </div>
      </section>
      <section class="panel" aria-labelledby="s-att">
        <h2 id="s-att">Attendance rules</h2>
        <div class="grid-2">
          {rule('lateAfterMinutes', 'Late after', 'Joining later than this after the session began counts as late.', 'min')}
          {rule('presentShare', 'Present from', 'Attending less than this share of the session counts as absent.', '%', 100)}
          {rule('mergeGapSeconds', 'Merge gaps up to', 'Short drops (a reconnect) count as attended.', 's')}
          {rule('settleMinutes', 'Final after', 'Minutes after the end before the report is final.', 'min')}
        </div>
      </section>
      <section class="panel" aria-labelledby="s-rec">
        <h2 id="s-rec">Recordings</h2>
        <label>
          <span>Keep recordings for</span>
          <span class="with-unit">
            <input name="recordingRetentionDays" type="number" min={1} max={3650} required value={retention} onInput={(e) => setRetention((e.target as HTMLInputElement).value)} aria-describedby="ret-hint" />
            <span class="unit">days</span>
          </span>
          <span class="hint" id="ret-hint">
            Older recordings are deleted, each with a recording.deleted event. 1 to 3650 days.
          </span>
        </label>
        {org.aiNotes !== undefined && (
          <>
            <label class="check">
              <input type="checkbox" name="aiNotes" checked={aiNotes} onChange={(e) => setAiNotes((e.target as HTMLInputElement).checked)} aria-describedby="ai-hint" />
              Transcripts and lecture notes of recordings
            </label>
            <label>
              <span>Language classes are taught in</span>
              <input name="language" value={language} maxLength={2} onInput={(e) => setLanguage((e.target as HTMLInputElement).value)} aria-describedby="ai-hint" class="short" spellcheck={false} />
            </label>
            <span class="hint" id="ai-hint">
              {org.aiNotesUnavailable ? `Recordings get no notes now: ${org.aiNotesUnavailable}` : 'Each recording gets a transcript, a summary, chapters and a quiz draft when it is ready.'} The language is a two-letter code (en, de, fr…).
            </span>
          </>
        )}
      </section>
      {action.error && <ErrorNote error={action.error} />}
      {flash}
      <div class="form-actions sticky-actions">
        <button class="btn primary" type="submit" disabled={action.busy}>
          {action.busy ? 'Saving…' : 'Save settings'}
        </button>
      </div>
    </form>
  );
}
