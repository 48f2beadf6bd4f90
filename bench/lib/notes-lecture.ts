/**
 * A synthetic class transcript for the notes scenario (bench/notes.ts): a science class of four topics
 * (how plants make food, the water cycle, volcanoes, the solar system) taught by a teacher, with
 * students asking and answering, a word from the teacher now and then that belongs to no topic, a
 * quiet exercise in each topic, a greeting and a goodbye. Speech is timed at about 145 words a minute
 * (students a little faster), with pauses between sentences; each speaker's sentences are grouped into
 * segments of one to three sentences, as a recognizer's utterances are, and the participants' segments
 * are merged on one timeline. The topics take equal shares of the class and their starts are known, so
 * the notes' chapters can be checked against them. Deterministic: the same options give the same class.
 */
import type { Transcript, TranscriptSegment } from '../../src/platform/ai/notes.ts';

interface Exchange {
  /** Who speaks first: a student asking, or the teacher asking the class. */
  by: 'student' | 'teacher';
  lines: string[];
}

interface Topic {
  name: string;
  opening: string;
  explain: string[];
  /** Clauses the teacher says again in other words ("So remember, ..."). */
  facts: string[];
  exchanges: Exchange[];
  /** What the class is asked to do in its quiet minute or two. */
  exercise: string;
  /** A paragraph of the textbook a student reads aloud. */
  reading: string[];
}

const TOPICS: Topic[] = [
  {
    name: 'how plants make food',
    opening: 'We will start with how plants make their food.',
    explain: [
      'Plants cannot walk around and look for food the way animals do, so they have to make their own.',
      'They do it in their leaves, using the light that comes from the sun.',
      'This process is called photosynthesis, which means putting things together with light.',
      'A plant takes in water through its roots and carbon dioxide from the air.',
      'The carbon dioxide enters the leaf through tiny holes on its underside called stomata.',
      'Inside the cells of the leaf there are small green structures called chloroplasts.',
      'The chloroplasts contain chlorophyll, the pigment that makes leaves look green.',
      'Chlorophyll absorbs red and blue light very well, but it reflects most of the green light.',
      'That reflected green light is what reaches your eyes when you look at a tree.',
      'The energy of the absorbed light is used to split molecules of water apart.',
      'The oxygen from the water is released into the air as a waste product.',
      'The hydrogen is combined with carbon dioxide to build a sugar called glucose.',
      'Glucose is the food of the plant, and it stores energy in its chemical bonds.',
      'The plant uses some of the glucose straight away for energy, through respiration.',
      'The rest is turned into starch and stored in the roots, the seeds and the fruit.',
      'When you eat a potato, you are eating starch that a plant stored for later.',
      'We can write the whole process as a word equation on the board.',
      'Carbon dioxide plus water, with light energy, gives glucose plus oxygen.',
      'How fast photosynthesis goes depends on how much light, water and carbon dioxide the plant gets.',
      'On a cloudy day, or in the shade, a plant makes less sugar.',
      'Farmers who grow tomatoes in greenhouses sometimes add carbon dioxide to the air to make the plants grow faster.',
      'Almost every food chain on Earth begins with photosynthesis.',
      'Even the oxygen we breathe was put into the air by plants and algae over millions of years.',
      'Leaves are usually thin and flat, which gives them a large surface to catch the light.',
      'The veins in a leaf carry water in and carry the sugar out to the rest of the plant.',
      'Plants on a windowsill often bend towards the window, because they grow towards the light.',
      'In an experiment, you can cover part of a leaf with foil and test it for starch the next day.',
      'The covered part turns out to have no starch, because no photosynthesis happened there.',
    ],
    facts: [
      'plants make their own food in their leaves',
      'photosynthesis needs light, water and carbon dioxide',
      'chlorophyll is the green pigment that captures the light',
      'the stomata let carbon dioxide into the leaf',
      'oxygen is the waste product of photosynthesis',
      'glucose is the sugar the plant makes',
      'extra glucose is stored as starch',
      'photosynthesis happens inside the chloroplasts',
      'less light means less sugar for the plant',
    ],
    exchanges: [
      { by: 'student', lines: ['Do plants breathe like we do?', 'That is a great question.', 'Plants respire all the time, day and night, just like us.', 'During the day they make much more oxygen than they use, so overall they give oxygen out.'] },
      { by: 'teacher', lines: ['Who can tell me where a plant gets its water from?', 'From the soil, through the roots.', 'Exactly, the roots take it up from the soil.'] },
      { by: 'student', lines: ['Why do leaves change color in the autumn?', 'In the autumn the tree stops making chlorophyll.', 'The green fades, and the yellow and orange pigments that were hidden underneath become visible.'] },
      { by: 'student', lines: ['Can a plant grow in the dark?', 'Only for a short time, using the food it has stored.', 'A seed can start to grow in the dark soil, but the seedling needs light soon after it comes up.'] },
    ],
    exercise: 'Take two minutes and draw a leaf in your notebook, with arrows for what goes in and what comes out.',
    reading: [
      'Green plants are the producers of every ecosystem.',
      'They capture the energy of sunlight and store it in the sugars they build.',
      'Animals that eat plants take in this stored energy, and animals that eat those animals take it in again.',
      'Without producers, no food chain on land or in the sea could exist.',
      'This is why scientists say that almost all the energy in living things came from the sun.',
    ],
  },
  {
    name: 'the water cycle',
    opening: 'Now let us move on to something different: the water cycle.',
    explain: [
      'The water on our planet is always moving between the oceans, the air and the land.',
      'The amount of water stays about the same, it just changes its form and its place.',
      'The sun heats the surface of the oceans, the lakes and the rivers.',
      'Some of the water turns into an invisible gas called water vapor, and this is evaporation.',
      'Plants also release water vapor from their leaves, and we call that transpiration.',
      'Warm air carries the vapor upwards, where the atmosphere is much colder.',
      'As the vapor cools, it turns back into tiny droplets of liquid water.',
      'This change from a gas to a liquid is called condensation.',
      'Billions of these droplets gathered together form a cloud.',
      'When the droplets collide and grow too heavy to float, they fall as precipitation.',
      'Precipitation can be rain, snow, sleet or hail, depending on the temperature.',
      'Some of the rain runs off the land into streams and rivers, which carry it back to the sea.',
      'Some soaks into the ground and becomes groundwater, which can stay underground for thousands of years.',
      'In cold places, snow builds up and is pressed into glaciers and ice sheets.',
      'About ninety seven percent of all the water on Earth is salty seawater.',
      'Most of the fresh water is frozen in the ice at the poles, so very little of it is easy for us to use.',
      'When seawater evaporates, the salt is left behind, which is why rain is fresh.',
      'You can see condensation at home when a cold glass gets wet on the outside.',
      'The water cycle also moves heat around the planet and shapes our weather.',
      'The water you drank this morning may once have fallen as snow on a mountain far away.',
      'Evaporation is faster on hot, dry and windy days, which is why washing dries quickly in summer.',
      'Fog is simply a cloud that forms close to the ground.',
      'Mountains force moist air to rise, so the side facing the wind often gets much more rain.',
      'Rivers carry the water downhill, and they also carry mud and sand that build up at their mouths.',
      'People use the cycle too, when they collect rainwater or pump groundwater up from wells.',
    ],
    facts: [
      'evaporation turns liquid water into water vapor',
      'condensation turns the vapor back into droplets',
      'clouds are made of billions of tiny droplets',
      'precipitation is water falling from the clouds',
      'the heat of the sun drives the whole water cycle',
      'groundwater is rain that soaked into the soil',
      'most of the water on Earth is salty',
      'transpiration is water vapor coming out of leaves',
    ],
    exchanges: [
      { by: 'teacher', lines: ['What do we call it when water vapor turns back into a liquid?', 'Condensation.', 'Well done, condensation.'] },
      { by: 'student', lines: ['Why are clouds white but sometimes dark gray?', 'Thin clouds scatter all the colors of sunlight, so they look white.', 'A thick rain cloud is so deep that little light gets through, so from below it looks dark.'] },
      { by: 'student', lines: ['Will we ever run out of water?', 'The total amount of water does not change, because it keeps going round the cycle.', 'The problem is clean fresh water in the right place, and that is something people have to manage carefully.'] },
      { by: 'student', lines: ['Is snow part of the cycle too?', 'Yes, snow is just precipitation when the air is below freezing.', 'When it melts in the spring it flows into the rivers like rain.'] },
    ],
    exercise: 'Talk to the person next to you for one minute and put the four stages of the cycle in order.',
    reading: [
      'The water cycle has no beginning and no end.',
      'Water evaporates from the oceans, condenses into clouds, falls as precipitation and flows back to the sea.',
      'A single molecule of water may spend nine days in the atmosphere, but thousands of years in the deep ocean or in a glacier.',
      'Rivers, lakes and groundwater hold only a tiny part of the water of the planet.',
      'Yet this small part is the water that people, animals and crops depend on every day.',
    ],
  },
  {
    name: 'volcanoes',
    opening: 'Right, for the next part we are going to talk about volcanoes.',
    explain: [
      'The Earth is made of layers, a bit like an onion.',
      'On the outside is the thin rocky crust, which we live on.',
      'Underneath the crust is the mantle, a thick layer of hot rock that moves very slowly.',
      'The crust is broken into huge pieces called tectonic plates.',
      'The plates float on the mantle and move a few centimeters every year, about as fast as your fingernails grow.',
      'Most volcanoes are found where two plates meet.',
      'Where plates pull apart, or where one plate sinks under another, rock in the mantle can melt.',
      'Melted rock under the ground is called magma.',
      'Magma is lighter than the solid rock around it, so it rises towards the surface.',
      'It collects in a magma chamber a few kilometers below the volcano.',
      'When the pressure in the chamber gets too high, the magma pushes up through cracks and erupts.',
      'Once magma reaches the surface we call it lava.',
      'Runny lava flows a long way and builds wide, gently sloping shield volcanoes, like the ones in Hawaii.',
      'Thick, sticky magma traps gas, so the pressure builds until the volcano explodes.',
      'An explosive eruption throws ash, gas and pieces of rock high into the sky.',
      'A fast flow of hot ash and gas down the side of a volcano is extremely dangerous.',
      'That is what buried the Roman town of Pompeii in the year seventy nine.',
      'When lava cools and hardens it becomes new rock, such as basalt.',
      'Scientists who study volcanoes are called volcanologists.',
      'They measure small earthquakes, the gases and the swelling of the ground to warn people before an eruption.',
      'Volcanic ash breaks down into very fertile soil, which is why farmers live near volcanoes despite the danger.',
      'Ash from a large eruption can travel around the world and even cool the weather for a year.',
      'Planes have to stay away from ash clouds, because the ash can stop their engines.',
      'Some volcanoes form over hot spots in the middle of a plate, far from its edges.',
      'Iceland sits on a ridge where two plates pull apart, so it has many active volcanoes.',
      'Hot springs and geysers are heated by magma that lies not far below the surface.',
    ],
    facts: [
      'magma is melted rock under the ground',
      'lava is magma that reaches the surface',
      'most volcanoes form where tectonic plates meet',
      'pressure in the magma chamber causes an eruption',
      'sticky magma makes explosive eruptions',
      'runny lava builds shield volcanoes',
      'the crust is broken into tectonic plates',
      'cooled lava becomes rock such as basalt',
    ],
    exchanges: [
      { by: 'student', lines: ['Are there any volcanoes near here?', 'Not active ones, no.', 'The nearest active volcanoes are hundreds of kilometers away, so you are quite safe.'] },
      { by: 'teacher', lines: ['Who remembers what we call magma once it comes out of the volcano?', 'Lava.', 'Exactly, lava.'] },
      { by: 'student', lines: ['Can a volcano that has been quiet for a long time erupt again?', 'It can.', 'We call a volcano dormant when it is sleeping but could wake up, and extinct when it will never erupt again.'] },
      { by: 'student', lines: ['How hot is lava?', 'Lava is usually between seven hundred and twelve hundred degrees Celsius.', 'That is hot enough to melt many metals.'] },
    ],
    exercise: 'Take two minutes and sketch a volcano in cross section, and label the magma chamber, the vent and the crater.',
    reading: [
      'There are about one thousand five hundred active volcanoes on land around the world.',
      'Many of them lie around the edge of the Pacific Ocean, in a zone called the Ring of Fire.',
      'Here one plate slides beneath another, and the sinking rock melts as it goes down into the hot mantle.',
      'Even more volcanoes are hidden under the sea, along the ridges where the plates move apart.',
      'Their lava cools quickly in the cold water and forms rounded shapes called pillow lava.',
    ],
  },
  {
    name: 'the solar system',
    opening: 'For the last part of today we are going to leave the Earth and look at the solar system.',
    explain: [
      'The solar system is the sun and everything that travels around it.',
      'The sun is a star, a huge ball of hot gas that makes its own light.',
      'It holds the planets in their orbits with the pull of its gravity.',
      'There are eight planets, and they all orbit the sun in the same direction.',
      'The four inner planets, Mercury, Venus, Earth and Mars, are small and rocky.',
      'The four outer planets, Jupiter, Saturn, Uranus and Neptune, are giants made mostly of gas and ice.',
      'Jupiter is the biggest planet, so big that all the others would fit inside it.',
      'Saturn is famous for its rings, which are made of pieces of ice and rock.',
      'Venus is the hottest planet, even though Mercury is closer to the sun, because its thick clouds trap the heat.',
      'Mars is called the red planet because its soil contains a lot of iron oxide, which is rust.',
      'Between Mars and Jupiter there is a belt of rocky objects called asteroids.',
      'Beyond Neptune there are icy dwarf planets, such as Pluto.',
      'A year is the time a planet takes to go once around the sun.',
      'The Earth takes about three hundred and sixty five days, but Neptune takes about one hundred and sixty five of our years.',
      'A day is the time a planet takes to spin once on its axis.',
      'Most planets have moons, and Jupiter and Saturn have dozens each.',
      'Light from the sun takes about eight minutes to reach the Earth.',
      'Our Earth is the only planet we know of with liquid water on its surface and with life.',
      'Spacecraft have visited every planet, and rovers are driving on Mars right now.',
      'The moon of the Earth has no air, so its surface is covered in craters from old impacts.',
      'Comets are balls of ice and dust that grow bright tails when they come close to the sun.',
      'The planets look like stars in the night sky, but they do not twinkle in the same way.',
      'Distances in space are so large that astronomers measure them in light years.',
      'The nearest star after the sun is more than four light years away.',
    ],
    facts: [
      'the sun is a star at the center of the solar system',
      'gravity keeps the planets in their orbits',
      'the inner planets are small and rocky',
      'the outer planets are giants of gas and ice',
      'Jupiter is the largest planet',
      'a year is one trip around the sun',
      'a day is one spin of a planet on its axis',
      'asteroids orbit between Mars and Jupiter',
    ],
    exchanges: [
      { by: 'student', lines: ['Why is Pluto not a planet any more?', 'In two thousand and six astronomers agreed on a stricter definition of a planet.', 'Pluto is small and shares its orbit with many other icy objects, so it is now called a dwarf planet.'] },
      { by: 'teacher', lines: ['Which planet is closest to the sun?', 'Mercury.', 'That is right, Mercury.'] },
      { by: 'student', lines: ['Could people live on Mars one day?', 'Maybe, but it would be very hard.', 'The air is thin and has almost no oxygen, and it is much colder than anywhere on Earth.'] },
      { by: 'student', lines: ['Is the sun going to burn out?', 'One day, but not for about five billion years.', 'So nobody here needs to worry about it.'] },
    ],
    exercise: 'Take a minute and write the eight planets in order from the sun.',
    reading: [
      'The solar system formed about four and a half billion years ago from a huge cloud of gas and dust.',
      'Gravity pulled most of the material into the center, where it became hot enough to form the sun.',
      'The rest flattened into a spinning disk, and small pieces stuck together to make the planets.',
      'Close to the sun only rock and metal could survive the heat, so the inner planets are rocky.',
      'Farther out, ice and gas were plentiful, and the outer planets grew into giants.',
    ],
  },
];

const RESTATE = [
  (f: string) => `So remember, ${f}.`,
  (f: string) => `Let me say that again: ${f}.`,
  (f: string) => `In other words, ${f}.`,
  (f: string) => `Write this down in your notebook: ${f}.`,
  (f: string) => `The key point here is that ${f}.`,
  (f: string) => `Just to be clear, ${f}.`,
];

/** Things a teacher says that belong to no topic. */
const ASIDES = [
  'Can everyone at the back see the board?',
  'Please keep your voices down for a moment.',
  'Hands up if you are still writing.',
  'Give me one second while I find the next slide.',
  'Phones away, please.',
  'Good, I see a lot of nodding.',
  'Is the sound coming through for those of you at home?',
];

const OPENING = [
  'Good morning everyone, please sit down and take out your notebooks.',
  'Today is a busy lesson: plants, the water cycle, volcanoes and the solar system.',
];
const CLOSING = [
  'That is all we have time for today.',
  'For homework, please read chapter six and answer the questions at the end.',
  'We will have a short quiz on all four topics next Tuesday.',
  'Thank you everyone, see you tomorrow.',
];

/** The quiet of each topic's exercise, at least (the class writing or talking in pairs, off the microphones). */
const EXERCISE_MS = 45_000;

const STUDENTS = ['Amara', 'Ben', 'Chloe', 'Daniel', 'Elif', 'Farid'];
export const TEACHER = 'Teacher';
/** The students, by name (lib/notes-spoken.ts gives each a voice). */
export const STUDENT_NAMES: readonly string[] = STUDENTS;

/** Mulberry32: a small seeded generator, so the class is the same every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Line {
  speaker: string;
  text: string;
  /** Silence before it, in ms (stretched to fill the topic's share). */
  gapMs: number;
  /** A pause that may grow: between sentences, not inside a question and its answer. */
  stretch: boolean;
  /** A fixed silence after it (the class working quietly). */
  silenceAfterMs?: number;
}

const words = (s: string) => s.split(/\s+/).filter(Boolean).length;
/** About 145 words a minute for the teacher, 160 for students, and a little for the start and end of each sentence. */
const speakMs = (l: Line) => Math.round((words(l.text) / (l.speaker === TEACHER ? 2.4 : 2.65)) * 1000 + 250);

export interface LectureLine {
  speaker: string;
  text: string;
  startMs: number;
  endMs: number;
}

export interface Lecture {
  transcript: Transcript;
  /** Every sentence, who says it and when, with punctuation (what lib/notes-spoken.ts speaks). */
  lines: LectureLine[];
  /** When each topic starts, in ms (the first at 0). */
  topicStartsMs: number[];
  topics: string[];
  speakers: string[];
  sentences: number;
  words: number;
  /** Milliseconds of speech (the rest is pauses and quiet work). */
  speechMs: number;
}

/**
 * A class of `minutes` (30 by default) in four topics of equal length. `punctuated: false` writes it as
 * the offline recognizer would (PocketSphinx: lower case, no punctuation, an utterance between pauses).
 */
export function syntheticLecture(o: { minutes?: number; punctuated?: boolean; seed?: number } = {}): Lecture {
  const minutes = o.minutes ?? 30;
  const random = prng(o.seed ?? 27);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const between = (lo: number, hi: number) => Math.round(lo + random() * (hi - lo));
  const student = () => pick(STUDENTS);
  const teacherLine = (text: string, gapMs = between(350, 900)): Line => ({ speaker: TEACHER, text, gapMs, stretch: true });
  const topicMs = (minutes * 60_000) / TOPICS.length;

  const timed: LectureLine[] = [];
  const topicStartsMs: number[] = [];
  for (const [t, topic] of TOPICS.entries()) {
    const start = t * topicMs;
    topicStartsMs.push(Math.round(start));
    // The topic's lines in order: its explanation, an exchange after every five sentences or so, the
    // quiet exercise half way, a restated fact now and then.
    const lines: Line[] = [];
    if (t === 0) lines.push(...OPENING.map((s) => teacherLine(s)));
    lines.push(teacherLine(topic.opening, t === 0 ? 600 : 1500));
    const exchanges = [...topic.exchanges];
    const restatements: Line[] = [];
    for (const [i, fact] of topic.facts.entries()) {
      for (const k of [i % RESTATE.length, (i + 3) % RESTATE.length]) restatements.push(teacherLine(RESTATE[k]!(fact)));
    }
    // the restatements are shuffled, so that each topic says again its facts in an order of its own
    for (let i = restatements.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [restatements[i], restatements[j]] = [restatements[j]!, restatements[i]!];
    }
    const optional: Line[] = [];
    const pushExchange = (ex: Exchange) => {
      const student1 = student();
      ex.lines.forEach((text, k) => {
        const speaker = ex.by === 'student' ? (k === 0 ? student1 : TEACHER) : k === 1 ? student1 : TEACHER;
        // a question is answered after a short think; the rest of the exchange follows on
        lines.push({ speaker, text, gapMs: k === 0 ? between(500, 1200) : k === 1 ? between(900, 2500) : between(300, 700), stretch: k === 0 });
      });
    };
    for (const [i, sentence] of topic.explain.entries()) {
      lines.push(teacherLine(sentence));
      if (i === Math.floor(topic.explain.length / 2)) {
        lines.push({ ...teacherLine(topic.exercise), silenceAfterMs: EXERCISE_MS });
        lines.push(teacherLine('Okay, pens down, let us carry on.', 0));
      }
      if (i === Math.floor(topic.explain.length / 4)) {
        const reader = student();
        lines.push(teacherLine(`${reader}, could you read the paragraph at the top of the page for us?`));
        topic.reading.forEach((text, k) => lines.push({ speaker: reader, text, gapMs: k === 0 ? between(800, 1500) : between(300, 600), stretch: false }));
        lines.push(teacherLine('Thank you, that was very clear.'));
      }
      if (i % 5 === 4 && exchanges.length) pushExchange(exchanges.shift()!);
      if (random() < 0.3 && restatements.length) {
        const r = restatements.shift()!;
        lines.push(r);
        optional.push(r);
      }
      if (random() < 0.08) {
        const aside = teacherLine(pick(ASIDES));
        lines.push(aside);
        optional.push(aside);
      }
    }
    for (const ex of exchanges) pushExchange(ex);
    if (t === TOPICS.length - 1) lines.push(...CLOSING.map((s) => teacherLine(s)));

    const duration = (ls: Line[]) => ls.reduce((ms, l) => ms + l.gapMs + speakMs(l) + (l.silenceAfterMs ?? 0), 0);
    // Too long: leave out asides and restatements, then cut the end. Too short: say more facts again
    // (each with a pause before it, at a random place), then the pauses and the exercise's silence grow.
    while (duration(lines) > topicMs && optional.length) lines.splice(lines.indexOf(optional.pop()!), 1);
    while (duration(lines) > topicMs) lines.splice(t === TOPICS.length - 1 ? -CLOSING.length - 1 : -1, 1);
    while (restatements.length && duration(lines) + restatements[0]!.gapMs + speakMs(restatements[0]!) < topicMs * 0.88) {
      // somewhere after the first third of the topic, once there is something to say again
      const from = Math.ceil(lines.length / 3);
      lines.splice(from + Math.floor(random() * (lines.length - from)), 0, restatements.shift()!);
    }
    let slack = topicMs - duration(lines);
    const stretchable = lines.filter((l) => l.stretch);
    // pauses grow by at most 1 s each; what is left is the quiet exercise
    const perPause = Math.min(1000, slack / Math.max(1, stretchable.length));
    for (const l of stretchable) l.gapMs += perPause;
    slack -= perPause * stretchable.length;
    const exercise = lines.find((l) => l.silenceAfterMs !== undefined);
    if (exercise) exercise.silenceAfterMs! += Math.max(0, slack);

    let at = start;
    for (const l of lines) {
      at += l.gapMs;
      const end = at + speakMs(l);
      timed.push({ speaker: l.speaker, text: l.text, startMs: Math.round(at), endMs: Math.round(end) });
      at = end + (l.silenceAfterMs ?? 0);
    }
  }

  // Each speaker's consecutive sentences, with less than 2 s between them, make a segment of at most
  // three; written as PocketSphinx writes, each stretch of speech between pauses is one (a sentence here).
  const [maxGapMs, maxSentences] = o.punctuated === false ? [300, 1] : [2000, 3];
  const segments: TranscriptSegment[] = [];
  let open: { speaker: string; texts: string[]; startMs: number; endMs: number } | null = null;
  const flush = () => {
    if (open) segments.push({ startMs: open.startMs, endMs: open.endMs, text: open.texts.join(' '), speaker: open.speaker });
    open = null;
  };
  for (const s of timed) {
    const text = o.punctuated === false ? s.text.toLowerCase().replace(/[^a-z0-9'\s]/g, ' ').replace(/\s+/g, ' ').trim() : s.text;
    if (open && open.speaker === s.speaker && s.startMs - open.endMs < maxGapMs && open.texts.length < maxSentences) {
      open.texts.push(text);
      open.endMs = s.endMs;
    } else {
      flush();
      open = { speaker: s.speaker, texts: [text], startMs: s.startMs, endMs: s.endMs };
    }
  }
  flush();

  return {
    transcript: { language: 'en', durationMs: Math.round(minutes * 60_000), segments },
    lines: timed,
    topicStartsMs,
    topics: TOPICS.map((t) => t.name),
    speakers: [...new Set(timed.map((s) => s.speaker))],
    sentences: timed.length,
    words: timed.reduce((n, s) => n + words(s.text), 0),
    speechMs: timed.reduce((ms, s) => ms + s.endMs - s.startMs, 0),
  };
}
