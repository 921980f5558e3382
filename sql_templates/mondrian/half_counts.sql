-- The candidate halves as classes for the t-closeness criterion: cls = pid·:mul + qi·2 + half.
SELECT pid * :mul + qi * 2 + half AS cls, sv AS vr, cnt
FROM :halves
