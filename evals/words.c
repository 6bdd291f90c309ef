/* Word lists for the RULER-style text tasks (words.h). */
#include "words.h"

const char *const orthros_words_adjectives[] = {
    "able", "angry", "ancient", "bitter", "black", "blue", "bold", "brave", "bright", "broad", "broken", "busy",
    "calm", "careful", "cheap", "clean", "clever", "cold", "cool", "crisp", "cruel", "curly", "damp", "dark", "deep",
    "dense", "dirty", "dry", "dull", "eager", "early", "easy", "empty", "equal", "exact", "fair", "false", "famous",
    "fancy", "fast", "fat", "fierce", "firm", "flat", "fresh", "friendly", "frozen", "full", "funny", "gentle",
    "giant", "glad", "golden", "good", "grand", "gray", "great", "green", "happy", "hard", "harsh", "heavy", "hidden",
    "high", "hollow", "honest", "hot", "huge", "humble", "hungry", "icy", "idle", "jolly", "kind", "large", "late",
    "lazy", "light", "little", "lively", "local", "lonely", "long", "loose", "loud", "lovely", "low", "loyal",
    "lucky", "mad", "magic", "mellow", "merry", "mild", "modern", "narrow", "neat", "nervous", "new", "nice", "noble",
    "noisy", "odd", "old", "orange", "pale", "patient", "plain", "plastic", "polite", "poor", "proud", "purple",
    "quick", "quiet", "rapid", "rare", "raw", "ready", "red", "rich", "rigid", "ripe", "rough", "round", "royal",
    "rude", "rusty", "sad", "safe", "salty", "sandy", "sharp", "shiny", "short", "shy", "silent", "silly", "silver",
    "simple", "slim", "slow", "small", "smart", "smooth", "soft", "solid", "sour", "spare", "spicy", "square",
    "stale", "steady", "steep", "sticky", "stiff", "still", "stormy", "strange", "strict", "strong", "sunny", "super",
    "sweet", "swift", "tall", "tame", "tender", "thick", "thin", "tidy", "tiny", "tired", "tough", "true", "ugly",
    "usual", "vast", "violet", "warm", "weak", "wet", "white", "wide", "wild", "windy", "wise", "wooden", "yellow",
    "young",
};
const int orthros_words_n_adjectives = 190;

const char *const orthros_words_nouns[] = {
    "acorn", "actor", "airport", "album", "anchor", "angle", "animal", "apple", "apron", "arch", "army", "arrow",
    "artist", "attic", "aunt", "autumn", "badge", "bakery", "ball", "balloon", "banana", "band", "bank", "barn",
    "basket", "bath", "beach", "bean", "bear", "beard", "bed", "bee", "bell", "belt", "bench", "berry", "bicycle",
    "bird", "blanket", "boat", "bone", "book", "boot", "bottle", "bowl", "box", "branch", "bread", "brick", "bridge",
    "brother", "brush", "bucket", "bull", "butter", "button", "cabin", "cable", "cake", "camel", "camera", "candle",
    "canoe", "canyon", "captain", "car", "carpet", "carrot", "castle", "cat", "cave", "cellar", "chair", "chalk",
    "cheese", "cherry", "chest", "chicken", "church", "circle", "city", "clock", "cloud", "coast", "coat", "coffee",
    "coin", "comet", "cookie", "copper", "corner", "cotton", "cow", "crab", "crane", "crayon", "cricket", "crown",
    "cup", "curtain", "daisy", "desert", "desk", "diamond", "dinner", "doctor", "dog", "doll", "dolphin", "donkey",
    "door", "dragon", "drawer", "dream", "drum", "duck", "eagle", "earth", "egg", "elbow", "engine", "feather",
    "fence", "field", "finger", "fire", "fish", "flag", "flame", "flower", "flute", "fog", "forest", "fork",
    "fountain", "fox", "frog", "garden", "gate", "ghost", "gift", "glass", "glove", "goat", "gold", "grape", "grass",
    "guitar", "hammer", "harbor", "hat", "hawk", "heart", "helmet", "hill", "honey", "horse", "hotel", "house",
    "island", "jacket", "jar", "jelly", "jewel", "kettle", "key", "king", "kitchen", "kite", "knife", "ladder",
    "lake", "lamp", "lantern", "leaf", "lemon", "letter", "library", "lion", "lizard", "lock", "magnet", "mango",
    "map", "marble", "market", "meadow", "melon", "mirror", "monkey", "moon", "mountain", "mouse", "museum", "needle",
    "nest", "night", "ocean", "office", "onion", "orchard", "otter", "owl", "oyster", "paint", "palace", "panda",
    "paper", "parrot", "peach", "pearl", "pencil", "pepper", "piano", "picture", "pillow", "pine", "planet", "plate",
    "pocket", "pond", "potato", "prince", "puzzle", "queen", "rabbit", "radio", "rain", "ribbon", "river", "road",
    "robot", "rocket", "roof", "rose", "sail", "salad", "salt", "sand", "school", "scissors", "sea", "seed", "shadow",
    "sheep", "shell", "ship", "shoe", "shovel", "silk", "singer", "sister", "sky", "snail", "snake", "snow", "soap",
    "sock", "spider", "spoon", "squirrel", "star", "station", "stone", "storm", "street", "sugar", "summer", "sun",
    "swan", "table", "tail", "teacher", "temple", "tent", "thunder", "tiger", "timber", "toast", "tomato", "tower",
    "town", "toy", "tractor", "train", "tree", "truck", "trumpet", "tulip", "turtle", "umbrella", "valley", "vase",
    "village", "violin", "wagon", "wall", "walnut", "water", "whale", "wheel", "whistle", "window", "wing", "winter",
    "wizard", "wolf", "zebra",
};
const int orthros_words_n_nouns = 308;
