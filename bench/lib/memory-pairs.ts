// Short facts as an assistant saves them, each with a question about it worded differently (no shared key
// word where English allows it), written for this benchmark. They measure how a saved fact scores when a
// user asks for it in other words, against how the other facts score for the same question.

interface MemoryPair {
  fact: string;
  question: string;
}

export const MEMORY_PAIRS: MemoryPair[] = [
  {
    fact: "My favourite programming language is OCaml and I live in Lisbon.",
    question: "Which coding language do I like best?",
  },
  { fact: "I am allergic to peanuts.", question: "Is there any food I should avoid?" },
  { fact: "My sister Clara lives in Montreal with her two kids.", question: "Where is my sibling based?" },
  {
    fact: "I drink green tea every morning instead of coffee.",
    question: "What is my usual breakfast beverage?",
  },
  { fact: "My dog is a border collie called Pixel.", question: "What breed is my pet?" },
  { fact: "I work as a backend engineer at a logistics startup.", question: "What is my job?" },
  { fact: "Tomorrow I am flying to Oslo for a robotics conference.", question: "When is my trip to Norway?" },
  { fact: "I prefer aisle seats on long flights.", question: "Where do I like to sit on a plane?" },
  { fact: "My wedding anniversary is on the 14th of June.", question: "When did I get married?" },
  {
    fact: "I am learning Japanese and practise kanji every evening.",
    question: "Which foreign language am I studying?",
  },
  {
    fact: "I ran my first marathon in Berlin in 2023 in 3 hours 58 minutes.",
    question: "How fast did I finish the long race?",
  },
  { fact: "My car is a blue 2019 Toyota Corolla hybrid.", question: "What vehicle do I drive?" },
  { fact: "I am vegetarian but I eat eggs and cheese.", question: "Do I eat meat?" },
  { fact: "My manager is Priya and our weekly sync is on Tuesdays.", question: "Who is my boss?" },
  {
    fact: "I keep my passwords in a password manager called Bitwarden.",
    question: "Which tool stores my login credentials?",
  },
  { fact: "I play the cello in a community orchestra.", question: "What instrument do I play?" },
  {
    fact: "My apartment lease ends in March and the rent is 1,450 euros.",
    question: "How much do I pay for housing?",
  },
  {
    fact: "I can't stand horror films; I like documentaries.",
    question: "What kind of movies should you recommend to me?",
  },
  { fact: "My blood type is O negative.", question: "What is my blood group?" },
  { fact: "I usually go to bed around 11 pm and wake up at 6:30.", question: "What are my sleeping hours?" },
  {
    fact: "The Wi-Fi password at the cabin is on the fridge magnet.",
    question: "Where can I find the network key at the holiday house?",
  },
  { fact: "I take 10 mg of vitamin D supplements in winter.", question: "Which supplements do I use?" },
  {
    fact: "My daughter's school starts at 8:15 and ends at 15:30.",
    question: "What time does my child need to be in class?",
  },
  {
    fact: "I support FC Porto and watch every Champions League game.",
    question: "Which football club is my team?",
  },
  { fact: "I switched from Android to an iPhone 15 last year.", question: "What phone do I use?" },
  {
    fact: "My grandmother's recipe for apple cake uses cardamom.",
    question: "What spice goes into the family dessert?",
  },
  {
    fact: "I'm saving for a house deposit and put 600 euros aside each month.",
    question: "How much money do I set aside monthly?",
  },
  { fact: "My dentist is Dr. Almeida on Rua Augusta.", question: "Who takes care of my teeth?" },
  { fact: "I speak Portuguese, English and a little French.", question: "Which languages am I fluent in?" },
  { fact: "I hate being called before 9 in the morning.", question: "When is it too early to phone me?" },
];
